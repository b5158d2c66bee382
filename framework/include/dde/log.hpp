#pragma once
/// \file
/// One named spdlog logger per component.

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace dde {

/// The logger called `name`, created on first use (stderr, with the process's pattern).
std::shared_ptr<spdlog::logger> logger(const std::string& name);

/// Sets the level of every logger from "trace", "debug", "info", "warn", "error" or "off";
/// returns false for an unknown level.
bool set_log_level(const std::string& level);

}  // namespace dde
