// Prints the address and body of an envelope after a round trip through dde::core's codec.
#include <cstdio>

#include "dde/envelope.hpp"
#include "dde/names.hpp"

int main() {
  dde::envelope e;
  e.id = dde::new_uuid();
  e.from = "shop/front";
  e.to = dde::parse_address("shop/orders")->str();
  e.body = {{"n", 1}};
  auto back = dde::decode_envelope(dde::encode_envelope(e));
  std::printf("%s %s\n", back.to.c_str(), back.body.dump().c_str());
  return back.id == e.id ? 0 : 1;
}
