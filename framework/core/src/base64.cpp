#include "dde/core/base64.hpp"

#include <openssl/evp.h>

namespace dde {

std::string base64_encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4 + 1);
  // EVP_EncodeBlock takes an int length: a larger input goes in pieces of whole 3-byte groups.
  constexpr std::size_t piece = std::size_t(3) << 20;
  for (std::size_t at = 0; at < in.size(); at += piece) {
    auto part = in.substr(at, piece);
    const std::size_t start = out.size();
    out.resize(start + (part.size() + 2) / 3 * 4 + 1);  // and the NUL it writes after the text
    int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data() + start),
                            reinterpret_cast<const unsigned char*>(part.data()), int(part.size()));
    out.resize(start + std::size_t(n));
  }
  return out;
}

bool base64_decode(std::string_view in, std::string& out) {
  if (in.size() % 4 != 0) return false;
  // EVP_DecodeBlock skips whitespace around the text and decodes the padding as zero bytes: the text
  // must be the alphabet alone, with at most two '=' at its end, and the padding's bytes go after.
  std::size_t pad = 0;
  while (pad < 2 && pad < in.size() && in[in.size() - 1 - pad] == '=') ++pad;
  for (std::size_t i = 0; i + pad < in.size(); ++i) {
    char c = in[i];  // ASCII, whatever the locale
    bool alphabet =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
    if (!alphabet) return false;
  }
  out.clear();
  constexpr std::size_t piece = std::size_t(4) << 20;
  for (std::size_t at = 0; at < in.size(); at += piece) {
    auto part = in.substr(at, piece);
    const std::size_t start = out.size();
    out.resize(start + part.size() / 4 * 3);
    int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data() + start),
                            reinterpret_cast<const unsigned char*>(part.data()), int(part.size()));
    if (n < 0) return false;
    out.resize(start + std::size_t(n));
  }
  out.resize(out.size() - pad);
  return true;
}

}  // namespace dde
