#include "dde/runtime/plugin_loader.hpp"

#include <dlfcn.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace dde::runtime {
namespace fs = std::filesystem;

namespace {

/// A fresh directory of our own for one plugin copy (mkdtemp: mode 0700, a name nobody could
/// prepare in advance); empty path if none can be made.
fs::path fresh_copy_dir() {
  std::string name = (fs::temp_directory_path() / "dde-plugin-XXXXXX").string();
  if (!::mkdtemp(name.data())) return {};
  return name;
}

bool has_elf_magic(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in.gcount() == 4 && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F';
}

}  // namespace

namespace {

std::string file_digest(const fs::path& path, const EVP_MD* md) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), md, nullptr);
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0)
    EVP_DigestUpdate(ctx.get(), buf, std::size_t(in.gcount()));
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &len);
  static const char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

}  // namespace

std::string file_md5(const fs::path& path) { return file_digest(path, EVP_md5()); }

std::string file_sha256(const fs::path& path) { return file_digest(path, EVP_sha256()); }

shared_object::~shared_object() {
  if (handle_) dlclose(handle_);
}

result<std::shared_ptr<shared_object>> shared_object::open(const fs::path& path,
                                                           const std::string& expected_sha256) {
  using r = result<std::shared_ptr<shared_object>>;
  std::error_code ec;
  if (!fs::exists(path, ec))
    return r::failure("plugin " + path.string() + " does not exist", plugin_failure::missing);
  if (!fs::is_regular_file(path, ec))
    return r::failure("plugin " + path.string() + " is not a regular file", plugin_failure::missing);
  if (!has_elf_magic(path))
    return r::failure("plugin " + path.string() + " is not an ELF shared object", plugin_failure::not_elf);
  auto so = std::shared_ptr<shared_object>(new shared_object());
  so->source_ = path;
  // The copy gets a directory of its own, removed with it right after dlopen, so nothing is left
  // behind (a directory a process was the old way: one per isolate system ever started).
  auto dir = fresh_copy_dir();
  if (dir.empty())
    return r::failure("cannot copy plugin " + path.string() + ": cannot make a directory in " +
                          fs::temp_directory_path().string() + ": " + std::strerror(errno),
                      plugin_failure::dlopen);
  struct remove_dir {
    fs::path dir;
    ~remove_dir() {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  } cleanup{dir};
  so->copy_ = dir / path.filename();
  fs::copy_file(path, so->copy_, ec);
  if (ec)
    return r::failure("cannot copy plugin " + path.string() + ": " + ec.message(), plugin_failure::dlopen);
  so->md5_ = file_md5(so->copy_);
  // The copy is what gets loaded, so the copy is what is checked: a file swapped after the check
  // cannot slip in.
  if (!expected_sha256.empty()) {
    auto actual = file_sha256(so->copy_);
    if (actual != expected_sha256) {
      return r::failure("plugin " + path.string() + " has SHA-256 " + actual + ", not the " +
                            expected_sha256 + " the deploy asked for: refused, not loaded",
                        plugin_failure::checksum);
    }
  }
  so->handle_ = dlopen(so->copy_.c_str(), RTLD_NOW | RTLD_LOCAL);
  // The mapping stays valid without the file (removed with its directory on return), so a crash
  // later leaves nothing behind.
  if (!so->handle_) {
    const char* err = dlerror();
    return r::failure("cannot load plugin " + path.string() + ": " + (err ? err : "unknown dlopen error"),
                      plugin_failure::dlopen);
  }
  return so;
}

void* shared_object::symbol(const char* name) const { return dlsym(handle_, name); }

result<std::shared_ptr<worker_plugin>> worker_plugin::load(const fs::path& path,
                                                           const std::string& expected_sha256) {
  using r = result<std::shared_ptr<worker_plugin>>;
  auto so = shared_object::open(path, expected_sha256);
  if (!so) return r::failure_of(so);
  auto plugin = std::make_shared<worker_plugin>();
  plugin->so_ = so.value();
  auto abi = reinterpret_cast<int (*)()>(plugin->so_->symbol("dde_plugin_abi_version"));
  plugin->create_ = reinterpret_cast<decltype(plugin->create_)>(plugin->so_->symbol("dde_create_worker"));
  plugin->destroy_ = reinterpret_cast<decltype(plugin->destroy_)>(plugin->so_->symbol("dde_destroy_worker"));
  if (!abi || !plugin->create_ || !plugin->destroy_)
    return r::failure("plugin " + path.string() +
                          " is not a DDE worker: it lacks dde_plugin_abi_version, dde_create_worker or "
                          "dde_destroy_worker (export the class with DDE_WORKER)",
                      plugin_failure::entry_points);
  int version = abi();
  if (version != DDE_ABI_VERSION)
    return r::failure("plugin " + path.string() + " was built for worker ABI version " +
                          std::to_string(version) + ", this host speaks version " +
                          std::to_string(DDE_ABI_VERSION) + "; rebuild it",
                      plugin_failure::abi);
  return plugin;
}

result<worker_plugin::worker_ptr> worker_plugin::create(worker_context* ctx) const {
  using r = result<worker_ptr>;
  worker* raw = nullptr;
  char error[512] = {};
  if (create_(ctx, &raw, error, sizeof error) != 0 || !raw)
    return r::failure("constructor of the worker in " + so_->source().string() + " threw: " + error,
                      plugin_failure::constructor);
  auto so = so_;
  auto destroy = destroy_;
  return worker_ptr(raw, [so, destroy](worker* w) { destroy(w); });
}

result<std::shared_ptr<router_plugin>> router_plugin::load(const fs::path& path) {
  using r = result<std::shared_ptr<router_plugin>>;
  auto so = shared_object::open(path);
  if (!so) return r::failure_of(so);
  auto plugin = std::make_shared<router_plugin>();
  plugin->so_ = so.value();
  auto abi = reinterpret_cast<int (*)()>(plugin->so_->symbol("dde_router_abi_version"));
  plugin->create_ = reinterpret_cast<decltype(plugin->create_)>(plugin->so_->symbol("dde_create_router"));
  plugin->destroy_ = reinterpret_cast<decltype(plugin->destroy_)>(plugin->so_->symbol("dde_destroy_router"));
  if (!abi || !plugin->create_ || !plugin->destroy_)
    return r::failure("router plugin " + path.string() +
                          " lacks dde_router_abi_version, dde_create_router or "
                          "dde_destroy_router (export the class with DDE_ROUTER)",
                      plugin_failure::entry_points);
  if (abi() != DDE_ROUTER_ABI_VERSION)
    return r::failure("router plugin " + path.string() + " was built for router ABI version " +
                          std::to_string(abi()) + ", this host speaks version " +
                          std::to_string(DDE_ROUTER_ABI_VERSION),
                      plugin_failure::abi);
  return plugin;
}

result<router_plugin::policy_ptr> router_plugin::create() const {
  using r = result<policy_ptr>;
  router_policy* raw = create_();
  if (!raw)
    return r::failure("constructor of the router in " + so_->source().string() + " threw",
                      plugin_failure::constructor);
  auto so = so_;
  auto destroy = destroy_;
  return policy_ptr(raw, [so, destroy](router_policy* p) { destroy(p); });
}

}  // namespace dde::runtime
