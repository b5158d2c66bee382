#pragma once
// What ddectl's commands send, built from their arguments: the deploy body from flags or a file,
// apply, dlq and ask (ctl_requests.cpp). Private to ddectl_commands; ctl_commands.cpp holds the
// command table and the invocation parser that call these.
#include <cstddef>
#include <cstdint>
#include <istream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "dde/registry/ctl_commands.hpp"

namespace dde::ctl::detail {

/// A usage error.
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The items of a comma-separated list, trimmed; a usage error when there is none.
std::vector<std::string> split_list(const std::string& text);
/// The values of the options every command has.
struct common_values {
  std::string registry = "http://127.0.0.1:8000";
  std::string output = "table";
  std::int64_t timeout_ms = 30000;
  std::string token_file, cluster_secret_file, tls_ca, ca, tls_cert, tls_key;
};

/// The values of `deploy`'s options: the thesis deploy body's fields.
struct deploy_values {
  std::string bootstrapper, mqs, system, isolate, uri, workers = "localhost", router = "roundRobin", args,
                                                       delivery_mode, sha256;
  bool hot_deployment = true;
  std::optional<std::int64_t> credits;
};

/// The values of every command's options, as the command line gave them (one command runs).
struct option_values {
  common_values common;
  deploy_values deploy;
  std::size_t own_options_given = 0;  ///< how many of the command's own options the command line gave
  std::string new_workers, to;        ///< migrate
  std::string filename;               ///< apply
  bool dry_run = false;               ///< apply
  std::optional<std::int64_t> limit;  ///< dlq
  bool all = false;                   ///< dlq
  std::string ask_mqs, mode;          ///< ask
  bool no_registry = false;           ///< ask
};

rest_call deploy_from_file(const std::string& file, std::istream& stdin_for_dash);
rest_call deploy_from_flags(const deploy_values& v);
rest_call apply_from(const std::vector<std::string>& a, const option_values& v, std::istream& stdin_for_dash);
rest_call dlq_from(const std::vector<std::string>& a, const option_values& v, std::istream&);
ask_call ask_from(const std::vector<std::string>& a, const option_values& v, std::istream& stdin_for_dash);

}  // namespace dde::ctl::detail
