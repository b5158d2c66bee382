#pragma once
// Reads the registry's OpenAPI 3.1 document (registry/openapi.json, which refers to
// schemas/pool-spec.schema.json) for the contract tests: its operations, their documented examples and
// statuses, and whether an answer is one the document allows.

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "json_schema_check.hpp"

namespace dde::test {

struct openapi_operation {
  std::string path;     ///< as documented: "/registry/system/{bootstrapperId}"
  std::string method;   ///< upper case: "GET"
  std::string id;       ///< operationId
  nlohmann::json spec;  ///< the operation object
};

class openapi_document {
 public:
  /// The document and the pool spec's schema it refers to (as "schemas/pool-spec.schema.json").
  openapi_document(nlohmann::json document, nlohmann::json pool_spec_schema);

  const nlohmann::json& openapi() const { return schemas_.document("openapi.json"); }
  const json_schema_check& schemas() const { return schemas_; }

  /// Every operation, in the document's order.
  const std::vector<openapi_operation>& operations() const { return operations_; }
  /// The operation called `id`; throws std::out_of_range when there is none.
  const openapi_operation& operation(const std::string& id) const;

  /// The statuses documented for `op`.
  std::set<int> statuses(const openapi_operation& op) const;
  /// The response object documented for `status` (a $ref followed), or nullptr.
  const nlohmann::json* response(const openapi_operation& op, int status) const;
  /// The documented request bodies: (example name, body); empty without a request body.
  std::vector<std::pair<std::string, nlohmann::json>> request_examples(const openapi_operation& op) const;
  /// The schema of `op`'s JSON request body (null without one).
  nlohmann::json request_schema(const openapi_operation& op) const;
  /// `op`'s path with every parameter replaced by its documented example, and the documented query
  /// parameters with theirs.
  std::string example_target(const openapi_operation& op) const;

  /// Why an answer with `status`, `content_type` and `body` is not one the document allows for `op`
  /// (the status is not listed, the media type is not, or the body does not match the schema); empty
  /// when it is.
  std::vector<std::string> answer_errors(const openapi_operation& op, int status,
                                         const std::string& content_type, const std::string& body) const;

  /// Every `$ref` of the document, each resolved (throws naming the first that points nowhere), and
  /// every schema's keywords known to the check (throws naming the first unknown).
  void check_references() const;

 private:
  /// A parameter object with its $ref followed.
  const nlohmann::json& parameter(const nlohmann::json& p) const;

  json_schema_check schemas_;
  std::vector<openapi_operation> operations_;
};

/// Whether the documented `pattern` ("/registry/system/{bootstrapperId}") matches the concrete `path`.
bool path_matches(const std::string& pattern, const std::string& path);

}  // namespace dde::test
