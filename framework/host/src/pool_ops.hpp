#pragma once
// What an operation on a pool (deploy, remove, RESTART, KILL, a new rate) answers: done, or refused
// with the HTTP status the activator, and through it the registry, answers with. The status is
// chosen where the refusal is made; nobody reads it back out of the text.

#include <functional>
#include <string>
#include <vector>

#include "dde/protocol/result.hpp"

namespace dde::host {

/// A refusal's kind; its value is the HTTP status it is answered with (http_status(); other: 500).
enum class refusal { other = 0, bad_request = 400, not_found = 404, conflict = 409, gateway_timeout = 504 };

using op_result = result<bool>;
using op_done = std::function<void(op_result)>;
/// KILL's answer: the ids of the workers being killed.
using kill_result = result<std::vector<std::string>>;
using kill_done = std::function<void(kill_result)>;

inline op_result refused(refusal why, std::string text) { return op_result::failure(std::move(text), why); }

}  // namespace dde::host
