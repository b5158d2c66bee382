#include "prometheus_text.hpp"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace dde::test {
namespace {

bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
bool name_char(char c) { return name_start(c) || std::isdigit(static_cast<unsigned char>(c)); }

bool valid_name(const std::string& s, bool label) {
  if (s.empty() || !name_start(s[0]) || (label && s[0] == ':')) return false;
  for (char c : s)
    if (!name_char(c) || (label && c == ':')) return false;
  return true;
}

std::optional<double> parse_value(const std::string& s) {
  if (s == "NaN") return 0.0 / 0.0;
  if (s == "+Inf") return 1.0 / 0.0;
  if (s == "-Inf") return -1.0 / 0.0;
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

/// The family a sample belongs to (summaries and histograms add suffixes).
std::string family_of(const std::string& name, const std::map<std::string, std::string>& types) {
  if (types.count(name)) return name;
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    std::string s = suffix;
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      auto base = name.substr(0, name.size() - s.size());
      if (types.count(base)) return base;
    }
  }
  return name;
}

}  // namespace

std::optional<double> prom_text::value(const std::string& name,
                                       const std::map<std::string, std::string>& labels) const {
  std::optional<double> found;
  for (auto& s : samples) {
    if (s.name != name) continue;
    bool match = true;
    for (auto& [k, v] : labels) {
      auto it = s.labels.find(k);
      match = match && it != s.labels.end() && it->second == v;
    }
    if (!match) continue;
    if (found) return std::nullopt;
    found = s.value;
  }
  return found;
}

prom_text parse_prometheus(const std::string& text) {
  prom_text out;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  std::set<std::string> series;
  std::set<std::string> finished;  // families whose samples ended
  std::string current;             // family of the previous sample
  auto fail = [&](const std::string& why) {
    out.error = "line " + std::to_string(number) + ": " + why + ": \"" + line + "\"";
    return out;
  };
  if (!text.empty() && text.back() != '\n') {
    out.error = "the text does not end with a newline";
    return out;
  }
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::istringstream words(line.substr(1));
      std::string keyword, name;
      words >> keyword >> name;
      if (keyword == "TYPE") {
        std::string type, extra;
        words >> type;
        if (words >> extra) return fail("TYPE with extra words");
        if (!valid_name(name, false)) return fail("bad metric name in TYPE");
        static const std::set<std::string> known = {"counter", "gauge", "histogram", "summary", "untyped"};
        if (!known.count(type)) return fail("unknown type");
        if (out.types.count(name)) return fail("second TYPE for " + name);
        if (finished.count(name) || current == name) return fail("TYPE after samples of " + name);
        out.types[name] = type;
      } else if (keyword == "HELP") {
        if (!valid_name(name, false)) return fail("bad metric name in HELP");
      }
      continue;
    }
    prom_sample s;
    std::size_t i = 0;
    while (i < line.size() && name_char(line[i])) ++i;
    s.name = line.substr(0, i);
    if (!valid_name(s.name, false)) return fail("bad metric name");
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        std::size_t start = i;
        while (i < line.size() && name_char(line[i])) ++i;
        auto label = line.substr(start, i - start);
        if (!valid_name(label, true)) return fail("bad label name");
        if (i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"') return fail("label without =\"");
        i += 2;
        std::string value;
        bool closed = false;
        while (i < line.size()) {
          char c = line[i++];
          if (c == '"') {
            closed = true;
            break;
          }
          if (c == '\\') {
            if (i >= line.size()) return fail("dangling escape");
            char e = line[i++];
            if (e == 'n')
              value += '\n';
            else if (e == '\\' || e == '"')
              value += e;
            else
              return fail("bad escape in label value");
          } else {
            value += c;
          }
        }
        if (!closed) return fail("unterminated label value");
        if (s.labels.count(label)) return fail("label " + label + " twice");
        s.labels[label] = value;
        if (i < line.size() && line[i] == ',') ++i;
      }
      if (i >= line.size()) return fail("unterminated label set");
      ++i;
    }
    if (i >= line.size() || line[i] != ' ') return fail("no space before the value");
    auto rest = line.substr(i + 1);
    auto space = rest.find(' ');
    auto v = parse_value(rest.substr(0, space));
    if (!v) return fail("bad value");
    if (space != std::string::npos) {  // a timestamp: an integer
      auto ts = rest.substr(space + 1);
      if (ts.empty() || ts.find_first_not_of("-0123456789") != std::string::npos)
        return fail("bad timestamp");
    }
    s.value = *v;
    auto family = family_of(s.name, out.types);
    if (!out.types.count(family)) return fail("sample without a TYPE line");
    if (family != current) {
      if (finished.count(family)) return fail("samples of " + family + " are not contiguous");
      if (!current.empty()) finished.insert(current);
      current = family;
    }
    std::string key = s.name;
    for (auto& [k, val] : s.labels) key += "|" + k + "=" + val;
    if (!series.insert(key).second) return fail("series repeated");
    if (out.types[family] == "counter" && s.value < 0) return fail("negative counter");
    out.samples.push_back(std::move(s));
  }
  return out;
}

std::string promtool_problems(const std::string& text, const std::filesystem::path& file) {
  std::string promtool;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string d; promtool.empty() && std::getline(dirs, d, ':');)
    if (!d.empty() && ::access((d + "/promtool").c_str(), X_OK) == 0) promtool = d + "/promtool";
  if (promtool.empty())
    return "promtool not found on the PATH: install the Debian package prometheus (deploy/install-deps.sh)";
  std::ofstream(file) << text;
  std::string out;
  FILE* p = ::popen((promtool + " check metrics < '" + file.string() + "' 2>&1").c_str(), "r");
  if (!p) return "cannot run " + promtool;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  int status = ::pclose(p);
  if (status != 0 && out.empty()) out = "promtool exited with status " + std::to_string(status);
  return out.empty() ? out : out + "\n--- the text it checked:\n" + text;
}

}  // namespace dde::test
