#include "dde/registry/ctl_output.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>

namespace dde::ctl {
namespace {

using json = nlohmann::ordered_json;

std::string text_of(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  if (v.is_number_float()) {
    double d = v.get<double>();
    char buf[32];
    std::snprintf(buf, sizeof buf, d == std::floor(d) && std::fabs(d) < 1e15 ? "%.0f" : "%.1f", d);
    return buf;
  }
  return v.dump();
}

std::string field(const json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it == j.end() ? "" : text_of(*it);
}

std::string join(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string out;
  for (auto& i : items) out += (out.empty() ? "" : sep) + i;
  return out;
}

std::vector<std::string> strings(const json& arr) {
  std::vector<std::string> out;
  if (arr.is_array())
    for (auto& v : arr) out.push_back(text_of(v));
  return out;
}

/// "stopped: 10 restarts ..." -> "stopped": a table's state column; the reason is listed below it.
std::string short_state(const std::string& state) { return state.substr(0, state.find(':')); }

/// A pool's rate limit: "10/60s", "5/250ms", "" for none.
std::string rate_of(const json& pool) {
  auto it = pool.find("rate");
  if (it == pool.end() || !it->is_object()) return "";
  auto per = it->value("perMs", 0LL);
  auto n = field(*it, "messages");
  return per % 1000 == 0 ? n + "/" + std::to_string(per / 1000) + "s" : n + "/" + std::to_string(per) + "ms";
}

/// "running/all" of a pool's workers.
std::string workers_of(const json& pool) {
  auto w = pool.find("workers");
  if (w == pool.end() || !w->is_array()) return field(pool, "workersCount");
  auto running =
      std::count_if(w->begin(), w->end(), [](const json& x) { return x.value("state", "") == "running"; });
  return std::to_string(running) + "/" + std::to_string(w->size());
}

std::string list_table(const json& body) {
  if (!body.is_array() || body.empty()) return "no node is connected\n";
  std::vector<std::vector<std::string>> rows;
  for (auto& n : body)
    rows.push_back(
        {field(n, "bootstrapperId"), field(n, "name"), field(n, "activator"), field(n, "connectedAt")});
  return table({"ID", "NAME", "ACTIVATOR", "CONNECTED"}, rows);
}

/// Reasons a table only abbreviates: "sampleSystem/consumer: stopped: 10 restarts within ...".
std::string reasons(const std::vector<std::pair<std::string, std::string>>& notes) {
  std::string out;
  for (auto& [who, why] : notes) out.append(who).append(": ").append(why).append("\n");
  return out;
}

std::string show_table(const json& body) {
  if (!body.is_object() || body.empty()) return "the node runs no isolate system\n";
  std::vector<std::vector<std::string>> systems, pools, workers;
  std::vector<std::pair<std::string, std::string>> notes;
  for (auto& [name, list] : body.items()) {
    const json first = list.is_array() && !list.empty() ? list[0] : json::object();
    systems.push_back({name, field(first, "state"), field(first, "pid"), field(first, "restarts"),
                       std::to_string(list.is_array() ? list.size() : 0)});
    if (!list.is_array()) continue;
    for (auto& p : list) {
      auto id = field(p, "id");
      auto state = field(p, "poolState");
      if (state.empty()) state = field(p, "state");
      if (short_state(state) != state) notes.emplace_back(id, state);
      auto stats = p.value("stats", json::object());
      auto governance = p.value("governance", json::object());
      pools.push_back({id, short_state(state), workers_of(p), field(p, "routerType"),
                       field(p, "deliveryMode"), rate_of(p), field(stats, "delivered"), field(stats, "done"),
                       field(stats, "failed"), field(governance, "deadLettered")});
      for (auto& w : p.value("workers", json::array()))
        workers.push_back({field(w, "id"), id, field(w, "path"), field(w, "state"), field(w, "inFlight"),
                           field(w, "done")});
    }
  }
  std::string out =
      table({"SYSTEM", "PROCESS", "PID", "RESTARTS", "POOLS"}, systems) + "\n" +
      table({"POOL", "STATE", "WORKERS", "ROUTER", "MODE", "RATE", "IN", "DONE", "FAILED", "DEAD"}, pools) +
      reasons(notes);
  if (!workers.empty())
    out += "\n" + table({"WORKER", "POOL", "PATH", "STATE", "IN-FLIGHT", "DONE"}, workers);
  return out;
}

std::string status_table(const json& body) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::pair<std::string, std::string>> notes;
  for (auto& node : body.value("nodes", json::array())) {
    auto name = field(node, "name");
    if (name.empty()) name = field(node, "bootstrapperId");
    if (field(node, "health") != "ok") {
      rows.push_back({name, "", "", "unreachable", "", "", "", "", "", ""});
      notes.emplace_back("node " + name, field(node, "error"));
      continue;
    }
    auto systems = node.value("systems", json::array());
    if (systems.empty()) rows.push_back({name, "", "", "idle", "", "", "", "", "", ""});
    for (auto& system : systems)
      for (auto& p : system.value("pools", json::array())) {
        auto id = field(p, "id");
        auto state = field(p, "poolState");
        if (short_state(state) != state) notes.emplace_back(id, state);
        auto live = p.value("live", json::object());
        rows.push_back({name, field(system, "name"), id.substr(id.find('/') + 1), short_state(state),
                        workers_of(p), field(live, "in"), field(live, "out"), field(live, "inFlight"),
                        field(live, "queueDepth"), field(live, "deadLetterDepth")});
      }
  }
  if (rows.empty()) return "no node is connected\n";
  std::string out =
      table({"NODE", "SYSTEM", "POOL", "STATE", "WORKERS", "IN/S", "OUT/S", "IN-FLIGHT", "QUEUE", "DLQ"},
            rows) +
      reasons(notes);
  if (body.contains("mqsError")) out += "queue depths: " + field(body, "mqsError") + "\n";
  return out;
}

std::string apply_table(const json& body) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::pair<std::string, std::string>> notes;
  for (auto& line : body.value("pools", json::array())) {
    auto node = field(line, "node");
    if (line.contains("from")) node = fmt::format("{} -> {}", field(line, "from"), node);
    rows.push_back({field(line, "pool"), node, field(line, "action"),
                    join(strings(line.value("changed", json::array()))), field(line, "result")});
    if (line.contains("error")) notes.emplace_back(field(line, "pool"), field(line, "error"));
  }
  std::vector<std::string> counts;
  auto summary = body.value("summary", json::object());
  for (auto& [what, n] : summary.items()) counts.push_back(text_of(n) + " " + what);
  auto out = table({"POOL", "NODE", "ACTION", "CHANGED", "RESULT"}, rows) + reasons(notes) + join(counts);
  if (body.value("dryRun", false)) out += " (dry run: nothing was changed)";
  return out + "\n";
}

/// "42s", "7m", "3h", "2d": how long ago `at_ms` was.
std::string age(const json& message, long long now_ms) {
  auto it = message.find("at");
  if (it == message.end() || !it->is_number_integer()) return "";
  auto s = std::max(0LL, (now_ms - it->get<long long>()) / 1000);
  if (s < 120) return std::to_string(s) + "s";
  if (s < 7200) return std::to_string(s / 60) + "m";
  if (s < 172800) return std::to_string(s / 3600) + "h";
  return std::to_string(s / 86400) + "d";
}

/// A table cell of at most `n` characters ("..." where cut).
std::string cut(std::string text, std::size_t n) {
  if (text.size() <= n) return text;
  text.resize(n - 3);
  while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xc0) == 0x80) text.pop_back();
  if (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xc0) == 0xc0)
    text.pop_back();  // a cut lead byte
  return text + "...";
}

std::string dlq_show(const json& m) {
  std::string out;
  for (auto key :
       {"id", "pool", "source", "reason", "attempts", "md5", "at", "size", "encoding", "truncated"})
    if (m.contains(key)) out += std::string(key) + ": " + field(m, key) + "\n";
  return out + "body:\n" + field(m, "body") + "\n";
}

std::string dlq_sentence(const std::vector<std::string>& args, const json& body) {
  auto pool = field(body, "pool").empty() ? (args.size() > 1 ? args[1] : "?") : field(body, "pool");
  auto missing = strings(body.value("missing", json::array()));
  std::string tail = missing.empty() ? "" : "; not found: " + join(missing);
  auto asked = args.size() > 2 ? std::to_string(args.size() - 2) : "";
  if (args[0] == "replay") {
    auto n = field(body, "replayed");
    return "replayed " + n + " of " + (asked.empty() ? n : asked) + " to " + pool + tail + "\n";
  }
  return "purged " + field(body, "purged") + (asked.empty() ? "" : " of " + asked) + " dead letter(s) of " +
         pool + tail + "\n";
}

std::string arg(const std::vector<std::string>& args, std::size_t i) {
  return i < args.size() ? args[i] : "?";
}

std::string sentence(const std::string& command, const std::vector<std::string>& args, const json& body) {
  if (command == "deploy")
    return "deployed pool " + field(body, "isolateSystemName") + "/" + field(body, "isolateName") + "\n";
  if (command == "shutdown") {
    auto stopped = body.value("stopped", json::object());
    auto system = stopped.contains("isolateSystemName") ? field(stopped, "isolateSystemName") : arg(args, 1);
    auto pools = strings(stopped.value("pools", json::array()));
    if (args.size() >= 3) return "stopped pool " + system + "/" + args[2] + "\n";
    return "stopped isolate system " + system +
           (stopped.contains("pid") ? " (pid " + field(stopped, "pid") + ")" : "") +
           (pools.empty() ? std::string() : " and its pools " + join(pools)) + "\n";
  }
  if (command == "restart")
    return "restarting pool " + arg(args, 1) + "/" + arg(args, 2) + " on node " + arg(args, 0) +
           ": each worker is replaced once the messages it holds are done\n";
  if (command == "kill")
    return "killed worker(s) " + join(strings(body.value("killed", json::array()))) + " of pool " +
           arg(args, 1) + "/" + arg(args, 2) +
           "; they finish what they hold (ddectl restart brings them back)\n";
  if (command == "migrate") {
    if (body.contains("to"))
      return "moved pool " + arg(args, 1) + "/" + arg(args, 2) + " from node " + field(body, "from") +
             " to node " + field(body, "to") + "\n";
    return "redeployed pool " + arg(args, 1) + "/" + arg(args, 2) + " on node " + arg(args, 0) +
           " with its new workers\n";
  }
  if (command == "health")
    return field(body, "status") + ": " + field(body, "nodes") + " node(s) connected, up " +
           field(body, "uptimeSeconds") + " s\n";
  return "";
}

}  // namespace

std::string table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width(header.size());
  auto cell = [](const std::vector<std::string>& row, std::size_t i) {
    return i < row.size() && !row[i].empty() ? row[i] : std::string("-");
  };
  for (std::size_t i = 0; i < header.size(); ++i) {
    width[i] = header[i].size();
    for (auto& r : rows) width[i] = std::max(width[i], cell(r, i).size());
  }
  auto line = [&](const std::vector<std::string>& row, bool is_header) {
    std::string out;
    for (std::size_t i = 0; i < header.size(); ++i) {
      auto c = is_header ? header[i] : cell(row, i);
      out += c;
      if (i + 1 < header.size()) out += std::string(width[i] - c.size() + 2, ' ');
    }
    return out + "\n";
  };
  std::string out = line(header, true);
  for (auto& r : rows) out += line(r, false);
  return out;
}

std::string dlq_table(const json& body, long long now_ms) {
  std::vector<std::vector<std::string>> rows;
  auto messages = body.value("messages", json::array());
  for (auto& m : messages)
    rows.push_back({field(m, "id"), cut(field(m, "reason"), 60), field(m, "attempts"),
                    field(m, "md5").substr(0, 12), age(m, now_ms), field(m, "size")});
  auto pool = field(body, "pool");
  std::string head = std::to_string(messages.size()) + " of " + field(body, "depth") + " dead letter(s)" +
                     (pool.empty() ? "" : " of " + pool) + "\n";
  if (messages.empty()) return head;
  return head + table({"ID", "REASON", "ATTEMPTS", "MD5", "AGE", "SIZE"}, rows);
}

std::string render(const std::string& command, const std::vector<std::string>& args, const json& body,
                   output_format format) {
  auto as_json = [&] { return body.dump(2, ' ', false, json::error_handler_t::replace) + "\n"; };
  if (format == output_format::json) return as_json();
  if (command == "list") return list_table(body);
  if (command == "show") return show_table(body);
  if (command == "status") return status_table(body);
  if (command == "apply") return apply_table(body);
  if (command == "dlq" && !args.empty()) {
    auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::system_clock::now().time_since_epoch());
    if (args[0] == "list") return dlq_table(body, now.count());
    if (args[0] == "show") return dlq_show(body);
    return dlq_sentence(args, body);
  }
  auto text = sentence(command, args, body);
  return text.empty() ? as_json() : text;
}

}  // namespace dde::ctl
