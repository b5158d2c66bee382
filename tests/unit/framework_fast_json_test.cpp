// The hot-path JSON parser and serializer must give exactly what nlohmann gives, for every input.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "dde/wire/fast_json.hpp"

namespace dde::wire {
namespace {

using json = nlohmann::json;

void expect_same(const std::string& text) {
  auto ours = parse_json(text);
  auto theirs = json::parse(text, nullptr, false);
  ASSERT_EQ(ours.is_discarded(), theirs.is_discarded()) << text;
  if (theirs.is_discarded()) return;
  EXPECT_EQ(ours, theirs) << text;
  EXPECT_EQ(ours.dump(), theirs.dump()) << text;
  EXPECT_EQ(ours.type(), theirs.type()) << text;
}

/// What a payload goes out as: nlohmann's compact dump, invalid UTF-8 replaced.
void expect_same_dump(const json& value) {
  EXPECT_EQ(dump_json(value), value.dump(-1, ' ', false, json::error_handler_t::replace))
      << value.dump(-1, ' ', true, json::error_handler_t::replace);
}

TEST(FastJson, GivesWhatNlohmannGivesForEnvelopesAndHeaders) {
  for (const char* text : {
           R"({"id":"5f1c","from":"sys/producer","to":"sys/consumer","body":{"seq":12,"pad":"xxxxxxxx"}})",
           R"({"action":"deliver","topic":"sys.consumer","tag":18446744073709551615,"redelivered":false})",
           R"({"ask":{"instance":"a-b","worker":"c"},"inReplyTo":"x","toWorker":"w","bin":"AAEC"})",
           R"(  {"a" : [1, -2, 3.5, -0, -0.0, 1e3, 2E-2, 1.5e+10, true, false, null, {}, [], ""]}  )",
           R"({"esc":"q\"b\\s\/b\bf\fn\nr\rt\t","dup":1,"dup":2})",
       })
    expect_same(text);
}

TEST(FastJson, LeavesEverythingElseToNlohmann) {
  for (const char* text : {
           "",
           " ",
           "{",
           "}",
           "[1,]",
           "{\"a\":1,}",
           "{\"a\" 1}",
           "01",
           "-",
           "1.",
           ".5",
           "1e",
           "+1",
           "--1",
           "nul",
           "truex",
           "[1 2]",
           "\"\\x\"",
           "\"\\u00e9\\ud83d\\ude00\"",
           "\"\\ud800\"",
           "\"caf\xc3\xa9\"",
           "\"bad \xff utf8\"",
           "\"tab\tinside\"",
           "1e999",
           "-1e999",
           "1e-400",
           "18446744073709551616",
           "-9223372036854775808",
           "-9223372036854775809",
           "\xef\xbb\xbf{}",
           "{} x",
           "[[[[[[[[[[]]]]]]]]]]",
       })
    expect_same(text);
  std::string deep(300, '[');
  deep += std::string(300, ']');
  expect_same(deep);
}

TEST(FastJson, FindsEveryStopByteInLongStrings) {
  // Long runs are scanned 16 bytes a step: a quote, escape, control or non-ASCII byte anywhere in them.
  for (int len : {15, 16, 17, 31, 32, 33, 64, 100}) {
    for (std::size_t at = 0; at < std::size_t(len); ++at) {
      for (const char* stop : {"\\n", "\\\"", "\t", "\x01", "\xc3\xa9", "\x7f", "\xff", "\"", "}"}) {
        std::string inner(std::size_t(len), 'x');
        inner.insert(at, stop);
        expect_same("{\"pad\":\"" + inner + "\",\"seq\":1}");
        expect_same("\"" + inner + "\"");
      }
    }
  }
}

TEST(FastJson, DumpsWhatNlohmannDumps) {
  for (const char* text : {
           R"({"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx","seq":12})",
           R"({"a":[1,-2,3.5,-0,-0.0,1e3,2E-2,1.5e+10,true,false,null,{},[],""],"b":{"c":{"d":[[]]}}})",
           R"({"esc":"q\"b\\s\/b\bf\fn\nr\rt\t\u0001\u001f","u":"\u00e9\u4e2d\ud83d\ude00"})",
           R"([18446744073709551615,-9223372036854775808,9223372036854775807,0,-1])",
           R"("")",
           R"(null)",
           R"(true)",
           R"(0.1)",
           R"(1e308)",
           R"(-1.5e-300)",
       })
    expect_same_dump(json::parse(text));
  // Strings as they come from workers: invalid UTF-8 (replaced), every byte, long runs with a stop
  // byte at each place of the 16-byte scan.
  std::string every;
  for (int c = 1; c < 256; ++c) every += char(c);
  expect_same_dump(every);
  expect_same_dump(json{{"bad", "\xff\xfe ok \xc3"}, {"k\x01", 1}});
  for (int len : {15, 16, 17, 33, 65536})
    for (std::size_t at : {std::size_t(0), std::size_t(len / 2), std::size_t(len - 1)})
      for (const char* stop : {"\n", "\"", "\\", "\x01", "\xc3\xa9", "\x7f", "\xff"}) {
        std::string inner(std::size_t(len), 'x');
        inner.insert(at, stop);
        expect_same_dump(inner);
        expect_same_dump(json{{"pad", inner}, {"seq", len}});
      }
  expect_same_dump(json::binary({1, 2, 3}));
  expect_same_dump(json(json::value_t::discarded));
}

TEST(FastJson, AgreesWithNlohmannOnRandomDocuments) {
  std::mt19937 rng(42);
  const std::string alphabet = "{}[]\",:\\/0123456789-+.eEtruefalsnl abc\n\t\x01\xc3\xa9";
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    int n = int(rng() % 40);
    for (int k = 0; k < n; ++k) text += alphabet[rng() % alphabet.size()];
    expect_same(text);
  }
  // Valid documents too: random values dumped, and parsed back.
  std::function<json(int)> make = [&](int depth) -> json {
    switch (rng() % (depth > 3 ? 5 : 7)) {
      case 0: return nullptr;
      case 1: return rng() % 2 == 0;
      case 2: return std::int64_t(rng()) - std::int64_t(rng());
      case 3: return double(rng()) / double(rng() | 1) * (rng() % 2 ? 1 : -1);
      case 4: {
        std::string s;
        for (int k = int(rng() % 12); k > 0; --k) s += char(1 + rng() % 126);
        return s;
      }
      case 5: {
        json a = json::array();
        for (int k = int(rng() % 4); k > 0; --k) a.push_back(make(depth + 1));
        return a;
      }
      default: {
        json o = json::object();
        for (int k = int(rng() % 4); k > 0; --k) o[std::string(1, char('a' + rng() % 5))] = make(depth + 1);
        return o;
      }
    }
  };
  for (int i = 0; i < 5000; ++i) {
    auto value = make(0);
    expect_same(value.dump(i % 2 ? 2 : -1));
    expect_same_dump(value);
  }
}

}  // namespace
}  // namespace dde::wire
