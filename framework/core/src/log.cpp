#include "dde/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <mutex>

namespace dde {

std::shared_ptr<spdlog::logger> logger(const std::string& name) {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  if (auto existing = spdlog::get(name)) return existing;
  auto created = spdlog::stderr_color_mt(name);
  created->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ [%n] %v");
  created->set_level(spdlog::get_level());
  return created;
}

bool set_log_level(const std::string& level) {
  auto parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off") return false;
  spdlog::set_level(parsed);
  return true;
}

}  // namespace dde
