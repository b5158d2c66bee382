#pragma once
// What ddectl prints for an answer: tables and sentences for people by default (`-o table`), the
// registry's JSON as it came, indented, for scripts (`-o json`). Kept apart from the HTTP exchange so
// tests check every layout without a registry.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dde::ctl {

enum class output_format { table, json };

/// An aligned table: a header row and rows, columns two spaces apart; "" cells print as "-".
std::string table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

/// `ddectl dlq list`'s table of a GET /registry/dlq answer: id, reason, attempts, md5, age (from
/// `now_ms`, wall-clock ms since the Unix epoch) and size, under a line saying how many there are.
std::string dlq_table(const nlohmann::ordered_json& body, long long now_ms);

/// What ddectl prints to stdout for `command`'s answer `body` (e.g. "list", "show", "apply"); `args`
/// are the command's positional arguments (for the sentences, e.g. the pool a restart named).
std::string render(const std::string& command, const std::vector<std::string>& args,
                   const nlohmann::ordered_json& body, output_format format);

}  // namespace dde::ctl
