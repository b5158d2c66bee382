#pragma once
// An HTTP exchange with a dde-mqs, as the registry's domain code sees it: a call and a callback, so
// the REST API never blocks its strand (the service runs it on a thread; tests answer it by hand).

#include <functional>
#include <string>

namespace dde::registry {

/// One HTTP request to an MQS.
struct mqs_call {
  std::string method;
  std::string url;
  std::string body;
};

/// Its outcome: `answered` false when the MQS could not be reached (`error` says why).
struct mqs_reply {
  bool answered = false;
  int status = 0;
  std::string body;
  std::string error;
};

/// Makes the call without blocking the caller; `done` runs later on the registry's strand.
using mqs_http_fn = std::function<void(mqs_call, std::function<void(mqs_reply)>)>;

}  // namespace dde::registry
