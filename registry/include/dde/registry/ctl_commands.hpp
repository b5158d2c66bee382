#pragma once
// ddectl's command line: which REST call each command makes. Kept apart from the HTTP exchange so
// tests check it without a registry.

#include <chrono>
#include <istream>
#include <optional>
#include <string>
#include <vector>

#include "dde/net/tls.hpp"
#include "dde/registry/ctl_ask.hpp"
#include "dde/registry/ctl_output.hpp"

namespace dde::ctl {

/// One REST call to the registry.
struct rest_call {
  std::string method;
  std::string path;  ///< e.g. /registry/system/list
  std::string body;  ///< JSON text, empty for GET
};

/// What the command line asks for: a call (or, for `ask`, a message to a pool through an MQS), a
/// help text to print, or a usage error.
struct invocation {
  std::optional<rest_call> call;
  std::optional<ask_call> ask;
  std::string registry = "http://127.0.0.1:8000";  ///< base URL
  std::chrono::milliseconds timeout{30000};
  std::string token;                            ///< bearer token for the registry (empty: none)
  std::string cluster_secret;                   ///< ask: sent to the MQS (empty: none)
  net::tls_options tls;                         ///< https/wss: --tls-ca (--ca), --tls-cert, --tls-key
  std::string command;                          ///< e.g. "show" (what the answer is rendered as)
  std::vector<std::string> args;                ///< the command's positional arguments
  output_format output = output_format::table;  ///< -o table|json
  std::string help;                             ///< print to stdout and exit 0 when not empty
  std::string error;                            ///< usage error: print to stderr and exit 2 when not empty
};

/// Reads `args` (argv without the program name). `deploy -` reads the body from `stdin_for_dash`.
invocation parse_invocation(const std::vector<std::string>& args, std::istream& stdin_for_dash);

/// The text of `ddectl --help`.
std::string general_help();

/// What an error answer of the registry says: its `{"error": "..."}`, else the body as it came.
std::string registry_error_text(const std::string& body);

}  // namespace dde::ctl
