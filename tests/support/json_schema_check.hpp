#pragma once
// Checks JSON values against JSON Schema (draft 2020-12, the dialect of OpenAPI 3.1): the subset the
// registry's documents use (registry/openapi.json, registry/schemas/pool-spec.schema.json). A schema
// that uses any other keyword is an error rather than silently half-checked, so a document cannot
// outgrow the check unnoticed.
//
// Validation keywords: $ref, type, enum, const, properties, required, additionalProperties, items,
// minItems, maxItems, minimum, maximum, minLength, maxLength, pattern (ECMAScript, unanchored), allOf,
// anyOf, oneOf, not, if/then/else. Annotations, ignored: $schema, $id, $comment, $defs, title,
// description, examples, default, format, deprecated, readOnly, writeOnly.

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace dde::test {

class json_schema_check {
 public:
  /// Makes `document` reachable by `$ref`s naming `uri` (relative URIs resolve against the referring
  /// document's, as files in one folder tree: "schemas/pool-spec.schema.json#/$defs/name").
  void add_document(std::string uri, nlohmann::json document);
  const nlohmann::json& document(const std::string& uri) const;

  /// Why `value` does not match `schema` (a schema inside document `base`), one line per failure
  /// naming where in `value`; empty when it matches.
  std::vector<std::string> errors(const nlohmann::json& value, const nlohmann::json& schema,
                                  const std::string& base) const;
  /// The same against the schema `ref` points to ("#/components/schemas/Node", "schemas/x.json").
  std::vector<std::string> errors_against(const nlohmann::json& value, const std::string& ref,
                                          const std::string& base) const;

  /// Throws std::invalid_argument naming the first keyword of `schema` or of a schema inside it that the
  /// check does not know.
  static void require_known_keywords(const nlohmann::json& schema, const std::string& where);

  /// What `ref` (relative to document `base`) points to, and the URI of the document holding it.
  /// Throws std::invalid_argument when it points nowhere.
  std::pair<const nlohmann::json*, std::string> resolve(const std::string& ref,
                                                        const std::string& base) const;

 private:
  void check(const nlohmann::json& value, const nlohmann::json& schema, const std::string& base,
             const std::string& where, std::vector<std::string>& out, int depth) const;

  std::vector<std::pair<std::string, nlohmann::json>> documents_;
};

}  // namespace dde::test
