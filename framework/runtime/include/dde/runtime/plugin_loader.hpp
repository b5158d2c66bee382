#pragma once
// Loads worker and router plugins (.so). Each load dlopens a private copy with a unique name,
// because dlopen caches by path and a hot swap must really load new code.

#include <filesystem>
#include <memory>
#include <string>

#include "dde/protocol/result.hpp"
#include "dde/router.hpp"
#include "dde/runtime/load_failures.hpp"
#include "dde/worker.hpp"

namespace dde::runtime {

/// A loaded shared object. Unloaded when the last owner lets go: every object the plugin created
/// holds a shared_ptr to it, so the code outlives them.
class shared_object {
 public:
  ~shared_object();
  /// Loads a private copy of `path`; with `expected_sha256` (lower-case hex) a copy whose SHA-256
  /// differs is refused before any of its code runs.
  static result<std::shared_ptr<shared_object>> open(const std::filesystem::path& path,
                                                     const std::string& expected_sha256 = {});
  void* symbol(const char* name) const;
  const std::filesystem::path& source() const { return source_; }
  /// md5 of the file that was loaded, as hex.
  const std::string& md5() const { return md5_; }

 private:
  void* handle_ = nullptr;
  std::filesystem::path source_;
  std::filesystem::path copy_;
  std::string md5_;
};

/// A worker plugin: creates instances of its worker class.
class worker_plugin {
 public:
  /// Loads the plugin at `path` and checks its entry points and ABI version.
  /// With `expected_sha256`, a file whose SHA-256 differs is refused (see `shared_object::open`).
  static result<std::shared_ptr<worker_plugin>> load(const std::filesystem::path& path,
                                                     const std::string& expected_sha256 = {});

  using worker_ptr = std::unique_ptr<worker, std::function<void(worker*)>>;
  /// Creates one instance bound to `ctx`; an error if its constructor throws.
  result<worker_ptr> create(worker_context* ctx) const;
  const shared_object& object() const { return *so_; }

 private:
  std::shared_ptr<shared_object> so_;
  int (*create_)(worker_context*, worker**, char*, unsigned long) = nullptr;
  void (*destroy_)(worker*) = nullptr;
};

/// A custom router plugin (`select_worker`).
class router_plugin {
 public:
  static result<std::shared_ptr<router_plugin>> load(const std::filesystem::path& path);
  using policy_ptr = std::unique_ptr<router_policy, std::function<void(router_policy*)>>;
  result<policy_ptr> create() const;

 private:
  std::shared_ptr<shared_object> so_;
  router_policy* (*create_)() = nullptr;
  void (*destroy_)(router_policy*) = nullptr;
};

/// md5 of a file as hex, or empty if it cannot be read.
std::string file_md5(const std::filesystem::path& path);
/// SHA-256 of a file as lower-case hex, or empty if it cannot be read.
std::string file_sha256(const std::filesystem::path& path);

}  // namespace dde::runtime
