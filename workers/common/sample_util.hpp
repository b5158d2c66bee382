#pragma once
// Helpers shared by the sample workers: clocks, atomic JSON stats files, argument reading.

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace dde::samples {

inline std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// Writes `j` to `dir/name` atomically (temp file + rename), so readers never see half a file.
inline void write_stats(const std::string& dir, const std::string& name, const nlohmann::json& j) {
  if (dir.empty()) return;
  std::filesystem::path target = std::filesystem::path(dir) / name;
  std::filesystem::path tmp = target;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump() << "\n";
  }
  std::error_code ec;
  std::filesystem::rename(tmp, target, ec);
}

/// `args[key]` as T, or `fallback` when absent; throws with the key's name when mistyped.
template <class T>
T arg_or(const nlohmann::json& args, const char* key, T fallback) {
  auto it = args.find(key);
  if (it == args.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const std::exception&) {
    throw std::invalid_argument(std::string("argument \"") + key + "\" has the wrong type: " + it->dump());
  }
}

inline std::string pid_text() { return std::to_string(::getpid()); }

/// Runs `fn` once the file `path` exists (at once when `path` is empty), looking for it every 2 ms
/// through `after` (the worker's own timer: `[this](auto d, auto f) { after(d, std::move(f)); }`),
/// so that workers deployed one after another start together once the last is up.
template <class After, class Fn>
void when_file_exists(const std::string& path, After after, Fn fn) {
  if (path.empty() || std::filesystem::exists(path)) return fn();
  after(std::chrono::milliseconds(2),
        [path, after, fn = std::move(fn)]() mutable { when_file_exists(path, after, std::move(fn)); });
}

}  // namespace dde::samples
