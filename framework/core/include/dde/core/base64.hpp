#pragma once
// Base64 (RFC 4648, with padding) over OpenSSL's EVP_EncodeBlock and EVP_DecodeBlock: the envelope's
// "bin" field on the wire and the bodies the MQS shows as JSON (dead letters). Daemon side only.

#include <string>
#include <string_view>

namespace dde {

std::string base64_encode(std::string_view in);
/// Decodes base64 (the alphabet alone, at most two '=' at the end); false on anything else.
bool base64_decode(std::string_view in, std::string& out);

}  // namespace dde
