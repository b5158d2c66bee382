#pragma once
// Forks children from one long-lived thread, so that PR_SET_PDEATHSIG (which fires when the
// *thread* that forked dies) means "when the test process dies".

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace dde::test::detail {

/// Starts `argv` in its own process group with stdin from /dev/null, stdout and stderr appended to
/// `log_file`, the current environment plus `extra_env`, and SIGKILL on the test process's death.
/// Returns the pid; throws std::system_error when fork or exec fails.
int spawn(const std::vector<std::string>& argv, const std::filesystem::path& log_file,
          const std::map<std::string, std::string>& extra_env);

}  // namespace dde::test::detail
