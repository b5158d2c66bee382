#pragma once
// What ddectl's commands send, built from their arguments: the deploy body from flags or a file,
// apply, dlq and ask (ctl_requests.cpp). Private to ddectl_commands; ctl_commands.cpp holds the
// command table and the invocation parser that call these.
#include <istream>
#include <stdexcept>
#include <string>
#include <vector>

#include "ctl_commands.hpp"
#include "dde/cli.hpp"

namespace dde::ctl::detail {

/// A usage error.
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The items of a comma-separated list, trimmed; a usage error when there is none.
std::vector<std::string> split_list(const std::string& text);
/// The flags that make `deploy` build its body from flags rather than a file.
extern const std::vector<std::string> deploy_flags;
rest_call deploy_from_file(const std::string& file, std::istream& stdin_for_dash);
rest_call deploy_from_flags(const cli& c);
rest_call apply_from(const std::vector<std::string>& a, const cli& c, std::istream& stdin_for_dash);
rest_call dlq_from(const std::vector<std::string>& a, const cli& c, std::istream&);
ask_call ask_from(const std::vector<std::string>& a, const cli& c, std::istream& stdin_for_dash);

}  // namespace dde::ctl::detail
