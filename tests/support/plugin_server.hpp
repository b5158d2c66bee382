#pragma once
// A tiny HTTP server on 127.0.0.1 for plugin-download tests: it serves one file at one path with an
// ETag (or only a Last-Modified date), answers If-None-Match / If-Modified-Since with 304, can be
// told to fail, and counts what it answered. Built on dde's own HTTP server, on a thread of its own.

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dde/net/ws.hpp"

namespace dde::test {

class plugin_server {
 public:
  struct options {
    bool etag = true;  ///< false: validate by Last-Modified only
    std::string path = "/libplugin.so";
  };
  plugin_server(std::filesystem::path file, options opts);
  explicit plugin_server(std::filesystem::path file) : plugin_server(std::move(file), options{}) {}
  ~plugin_server();
  plugin_server(const plugin_server&) = delete;
  plugin_server& operator=(const plugin_server&) = delete;

  /// The URL of the served file (or of another path on this server).
  std::string url() const { return url(options_.path); }
  std::string url(const std::string& path) const;
  /// Serves another file from now on (a new version: new ETag and Last-Modified).
  void serve(std::filesystem::path file);
  /// Answers every request with `status` (e.g. 503); 0 serves the file again.
  void fail_with(int status);
  /// Never answers (each request hangs until the server stops).
  void hang(bool on);

  std::uint64_t requests() const { return requests_; }
  std::uint64_t not_modified() const { return not_modified_; }  ///< 304s
  std::uint64_t downloads() const { return downloads_; }        ///< 200s with the file

 private:
  void answer(const net::http_request& req, std::function<void(net::http_response)> respond);

  options options_;
  boost::asio::io_context io_;
  std::unique_ptr<net::server> server_;
  std::thread thread_;
  std::mutex mutex_;
  std::filesystem::path file_;
  int version_ = 1;
  int fail_status_ = 0;
  bool hang_ = false;
  std::vector<std::function<void(net::http_response)>> held_;  ///< answers withheld while hanging
  std::atomic<std::uint64_t> requests_{0}, not_modified_{0}, downloads_{0};
};

}  // namespace dde::test
