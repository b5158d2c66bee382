#include "state_store.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <stdexcept>

#include "dde/protocol/pool_spec.hpp"

namespace dde::registry {
namespace {

/// Closes the database when the store goes.
struct db_closer {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
struct stmt_closer {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using statement = std::unique_ptr<sqlite3_stmt, stmt_closer>;

class sqlite_store : public state_store {
 public:
  explicit sqlite_store(std::string path) : path_(std::move(path)) {
    sqlite3* db = nullptr;
    int rc = sqlite3_open_v2(path_.c_str(), &db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    db_.reset(db);
    if (rc != SQLITE_OK) fail("cannot open", rc);
    sqlite3_busy_timeout(db_.get(), 5000);
    // WAL with synchronous NORMAL: a commit survives a crash of the registry (not always of the
    // machine's power), and costs no fsync.
    exec("PRAGMA journal_mode=WAL");
    exec("PRAGMA synchronous=NORMAL");
    exec(
        "CREATE TABLE IF NOT EXISTS nodes (id TEXT PRIMARY KEY, info TEXT NOT NULL, pools TEXT NOT NULL, "
        "saved_at INTEGER NOT NULL)");
  }

  std::vector<remembered_node> load() override {
    auto s = prepare("SELECT id, info, pools FROM nodes ORDER BY saved_at, id");
    std::vector<remembered_node> out;
    int rc;
    while ((rc = sqlite3_step(s.get())) == SQLITE_ROW)
      out.push_back(decode_node({column(s, 0), column(s, 1), column(s, 2)}, name()));
    if (rc != SQLITE_DONE) fail("cannot read", rc);
    return out;
  }

  void save(const remembered_node& node) override {
    auto s = prepare(
        "INSERT INTO nodes (id, info, pools, saved_at) VALUES (?1, ?2, ?3, strftime('%s','now')) "
        "ON CONFLICT(id) DO UPDATE SET info = excluded.info, pools = excluded.pools, saved_at = "
        "excluded.saved_at");
    auto row = encode_node(node);
    bind(s, 1, row.id);
    bind(s, 2, row.info);
    bind(s, 3, row.pools);
    if (int rc = sqlite3_step(s.get()); rc != SQLITE_DONE) fail("cannot write", rc);
  }

  std::string name() const override { return "state file " + path_; }

  void forget(const std::string& id) override {
    auto s = prepare("DELETE FROM nodes WHERE id = ?1");
    bind(s, 1, id);
    if (int rc = sqlite3_step(s.get()); rc != SQLITE_DONE) fail("cannot write", rc);
  }

 private:
  [[noreturn]] void fail(const std::string& what, int rc) const {
    std::string why = db_ ? sqlite3_errmsg(db_.get()) : sqlite3_errstr(rc);
    throw std::runtime_error(what + " state file " + path_ + ": " + why);
  }
  void exec(const char* sql) {
    char* error = nullptr;
    if (sqlite3_exec(db_.get(), sql, nullptr, nullptr, &error) != SQLITE_OK) {
      std::string why = error ? error : "unknown error";
      sqlite3_free(error);
      throw std::runtime_error("cannot set up state file " + path_ + ": " + why);
    }
  }
  statement prepare(const char* sql) {
    sqlite3_stmt* s = nullptr;
    if (int rc = sqlite3_prepare_v2(db_.get(), sql, -1, &s, nullptr); rc != SQLITE_OK)
      fail("cannot query", rc);
    return statement(s);
  }
  static void bind(const statement& s, int i, const std::string& text) {
    sqlite3_bind_text(s.get(), i, text.data(), int(text.size()), SQLITE_TRANSIENT);
  }
  static std::string column(const statement& s, int i) {
    auto* text = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), i));
    return text ? text : "";
  }

  std::string path_;
  std::unique_ptr<sqlite3, db_closer> db_;
};

}  // namespace

std::unique_ptr<state_store> open_sqlite_store(const std::string& path) {
  return std::make_unique<sqlite_store>(path);
}

node_row encode_node(const remembered_node& node) {
  ordered_json info = {{"name", node.info.name},
                       {"ip", node.info.ip},
                       {"port", node.info.port},
                       {"activator", node.info.activator}};
  return {node.info.id, info.dump(), node.pools.dump(-1, ' ', false, ordered_json::error_handler_t::replace)};
}

remembered_node decode_node(const node_row& row, const std::string& store) {
  auto info = ordered_json::parse(row.info, nullptr, false);
  auto pools = ordered_json::parse(row.pools, nullptr, false);
  if (!info.is_object() || !pools.is_object())
    throw std::runtime_error(store + ": the row of node " + row.id + " is not JSON");
  remembered_node n;
  n.info.id = row.id;
  n.info.name = info.value("name", "");
  n.info.ip = info.value("ip", "");
  n.info.port = info.value("port", "");
  n.info.activator = info.value("activator", "");
  n.pools = std::move(pools);
  return n;
}

ordered_json remembered_pools(const ordered_json& describe) {
  ordered_json out = ordered_json::object();
  if (!describe.is_object()) return out;
  const auto& spec_fields = pool_spec_fields();
  for (auto& [system, pools] : describe.items()) {
    if (!pools.is_array()) continue;
    auto& kept = out[system] = ordered_json::array();
    for (auto& entry : pools) {
      if (!entry.is_object()) continue;
      ordered_json pool = ordered_json::object();
      for (auto& [key, value] : entry.items())
        if (key == "id" || key == "workerUri" || key == "workersCount" ||
            key == "messageQueuingSystemServer" ||
            std::binary_search(spec_fields.begin(), spec_fields.end(), key))
          pool[key] = value;
      kept.push_back(std::move(pool));
    }
  }
  return out;
}

}  // namespace dde::registry
