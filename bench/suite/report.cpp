#include "report.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>

namespace dde::bench {

void table::write_csv(const std::filesystem::path& dir) const {
  std::ofstream out(dir / (name + ".csv"));
  for (std::size_t i = 0; i < columns.size(); ++i) out << (i ? "," : "") << columns[i];
  out << "\n";
  for (auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) out << (i ? "," : "") << row[i];
    out << "\n";
  }
}

std::string table::markdown() const {
  std::string md = "|";
  for (auto& c : columns) md += " " + c + " |";
  md += "\n|";
  for (std::size_t i = 0; i < columns.size(); ++i) md += "---|";
  md += "\n";
  for (auto& row : rows) {
    md += "|";
    for (auto& cell : row) md += " " + cell + " |";
    md += "\n";
  }
  return md;
}

std::string num(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, std::isfinite(v) ? v : 0.0);
  return buf;
}

std::string ratio(double ours, double raw) { return raw > 0 ? num(ours / raw, 2) : "-"; }

double progress::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void progress::line(const std::string& text) const {
  const int s = int(elapsed_s());
  std::fprintf(stderr, "[bench +%02d:%02d] %s\n", s / 60, s % 60, text.c_str());
  std::fflush(stderr);
}

}  // namespace dde::bench
