#include "plugin_server.hpp"

#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <stdexcept>

namespace dde::test {

plugin_server::plugin_server(std::filesystem::path file, options opts)
    : options_(std::move(opts)), file_(std::move(file)) {
  net::server_options so;
  so.host = "127.0.0.1";
  server_ = net::server::create(io_, so);
  server_->set_http_async(
      [this](const net::http_request& req, std::function<void(net::http_response)> respond) {
        answer(req, std::move(respond));
      });
  if (auto ec = server_->start()) throw std::runtime_error("plugin_server cannot listen: " + ec.message());
  thread_ = std::thread([this] { io_.run(); });
}

plugin_server::~plugin_server() {
  server_->stop();
  io_.stop();
  thread_.join();
  held_.clear();
}

std::string plugin_server::url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(server_->port()) + path;
}

void plugin_server::serve(std::filesystem::path file) {
  std::lock_guard lock(mutex_);
  file_ = std::move(file);
  ++version_;
}

void plugin_server::fail_with(int status) {
  std::lock_guard lock(mutex_);
  fail_status_ = status;
}

void plugin_server::hang(bool on) {
  std::lock_guard lock(mutex_);
  hang_ = on;
}

void plugin_server::answer(const net::http_request& req, std::function<void(net::http_response)> respond) {
  ++requests_;
  std::filesystem::path file;
  int version = 0;
  {
    std::lock_guard lock(mutex_);
    if (hang_) return held_.push_back(std::move(respond));  // the connection waits until the server stops
    if (fail_status_) {
      net::http_response r;
      r.status = fail_status_;
      r.content_type = "text/plain";
      r.body = "failing on purpose\n";
      return respond(std::move(r));
    }
    file = file_;
    version = version_;
  }
  net::http_response r;
  r.content_type = "application/octet-stream";
  if (req.method != "GET" || req.target != options_.path) {
    r.status = req.method != "GET" ? 405 : 404;
    r.content_type = "text/plain";
    r.body = "no such file here\n";
    return respond(std::move(r));
  }
  std::ifstream in(file, std::ios::binary);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ostringstream etag;
  etag << '"' << std::hex << std::hash<std::string>{}(content) << '-' << version << '"';
  // One second per version: a valid HTTP date that changes with every new file.
  std::string last_modified = "Wed, 21 Oct 2015 07:" + std::to_string(10 + version / 60 % 50) + ":" +
                              (version % 60 < 10 ? "0" : "") + std::to_string(version % 60) + " GMT";
  auto header = [&](const char* name) {
    auto it = req.headers.find(name);
    return it == req.headers.end() ? std::string() : it->second;
  };
  bool unchanged =
      options_.etag ? header("if-none-match") == etag.str() : header("if-modified-since") == last_modified;
  if (options_.etag) r.headers["ETag"] = etag.str();
  r.headers["Last-Modified"] = last_modified;
  if (unchanged) {
    ++not_modified_;
    r.status = 304;
    return respond(std::move(r));
  }
  ++downloads_;
  r.body = std::move(content);
  respond(std::move(r));
}

}  // namespace dde::test
