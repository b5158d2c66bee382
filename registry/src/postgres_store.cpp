// The state store that several registries share (--state-url): a PostgreSQL database.
//
// Leadership is a session-level advisory lock on the store's one connection: the registry whose
// session holds it leads. PostgreSQL releases the lock when that session ends (the registry dies, its
// connection breaks), and a standby polling pg_try_advisory_lock takes it. Writes go over the same
// connection and only while it holds the lock, so a registry that lost the lock (its connection
// broke) cannot write after another took over: its writes fail with the connection.
#include <libpq-fe.h>

#include <chrono>
#include <memory>
#include <stdexcept>

#include "state_store.hpp"

namespace dde::registry {
namespace {

/// The advisory lock of a DDE cluster's registries ("ddeR"): one cluster per database.
constexpr const char* lock_key = "1684301138";

struct conn_closer {
  void operator()(PGconn* c) const { PQfinish(c); }
};
struct result_closer {
  void operator()(PGresult* r) const { PQclear(r); }
};
using result = std::unique_ptr<PGresult, result_closer>;

std::string trimmed(const char* message) {
  std::string s = message ? message : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.empty() ? "unknown error" : s;
}

class postgres_store : public state_store {
 public:
  postgres_store(std::string url, std::string self) : url_(std::move(url)), self_(std::move(self)) {}

  std::string name() const override { return "PostgreSQL store " + where(); }
  bool shared() const override { return true; }

  lead_result lead() override {
    try {
      if (!conn_ || PQstatus(conn_.get()) != CONNECTION_OK) {
        bool had = leading_;
        drop();
        connect();
        if (had) return {false, "the connection to the " + name() + " broke, and with it the lock", {}};
      }
      if (leading_) {
        // Still the same session, so still the lock's holder: check that the session lives.
        query("SELECT 1");
        return {true, {}, {}};
      }
      auto r = query("SELECT pg_try_advisory_lock(" + std::string(lock_key) + ")");
      if (std::string(PQgetvalue(r.get(), 0, 0)) != "t") return {false, "another registry leads", leader()};
      leading_ = true;
      set_up();
      return {true, {}, {}};
    } catch (const std::exception& e) {
      bool had = leading_;
      drop();
      return {false, (had ? "lost the lock: " : "") + std::string(e.what()), {}};
    }
  }

  std::vector<remembered_node> load() override {
    must_lead();
    auto r = query("SELECT id, info, pools FROM dde_registry_nodes ORDER BY saved_at, id");
    std::vector<remembered_node> out;
    for (int i = 0; i < PQntuples(r.get()); ++i)
      out.push_back(decode_node(
          {PQgetvalue(r.get(), i, 0), PQgetvalue(r.get(), i, 1), PQgetvalue(r.get(), i, 2)}, name()));
    return out;
  }

  void save(const remembered_node& node) override {
    must_lead();
    auto row = encode_node(node);
    query(
        "INSERT INTO dde_registry_nodes (id, info, pools, saved_at) VALUES ($1, $2, $3, "
        "extract(epoch from now())::bigint) ON CONFLICT (id) DO UPDATE SET info = excluded.info, "
        "pools = excluded.pools, saved_at = excluded.saved_at",
        {row.id, row.info, row.pools});
  }

  void forget(const std::string& id) override {
    must_lead();
    query("DELETE FROM dde_registry_nodes WHERE id = $1", {id});
  }

 private:
  /// The URL without its password, for messages.
  std::string where() const {
    auto at = url_.find('@');
    auto scheme = url_.find("://");
    if (at == std::string::npos || scheme == std::string::npos || at < scheme) return url_;
    auto colon = url_.find(':', scheme + 3);
    if (colon == std::string::npos || colon > at) return url_;
    return url_.substr(0, colon) + ":***" + url_.substr(at);
  }

  void connect() {
    // Defaults first, the URL last: what the URL says wins. A stalled store holds the registry's
    // strand at most a few seconds (connect_timeout, tcp_user_timeout, statement_timeout).
    const char* keys[] = {"connect_timeout",  "keepalives_idle",  "keepalives_interval",
                          "keepalives_count", "tcp_user_timeout", "options",
                          "application_name", "dbname",           nullptr};
    std::string app = "dde-registry " + self_;
    const char* values[] = {"3",         "5",          "2",    "2", "5000", "-c statement_timeout=5000",
                            app.c_str(), url_.c_str(), nullptr};
    conn_.reset(PQconnectdbParams(keys, values, 1));
    if (!conn_) throw std::runtime_error("cannot reach the " + name() + ": out of memory");
    if (PQstatus(conn_.get()) != CONNECTION_OK)
      throw std::runtime_error("cannot reach the " + name() + ": " + trimmed(PQerrorMessage(conn_.get())));
  }

  void drop() {
    conn_.reset();
    leading_ = false;
  }

  void must_lead() const {
    if (!leading_) throw std::runtime_error(name() + ": this registry does not hold the lock (a standby)");
  }

  /// The tables, made by the first registry that leads (IF NOT EXISTS: the others find them).
  void set_up() {
    query(
        "CREATE TABLE IF NOT EXISTS dde_registry_nodes (id TEXT PRIMARY KEY, info TEXT NOT NULL, "
        "pools TEXT NOT NULL, saved_at BIGINT NOT NULL)");
    query(
        "CREATE TABLE IF NOT EXISTS dde_registry_leader (lock BIGINT PRIMARY KEY, registry TEXT NOT NULL, "
        "since BIGINT NOT NULL)");
    query("INSERT INTO dde_registry_leader (lock, registry, since) VALUES (" + std::string(lock_key) +
              ", $1, (extract(epoch from now()) * 1000)::bigint) ON CONFLICT (lock) DO UPDATE SET "
              "registry = excluded.registry, since = excluded.since",
          {self_});
  }

  /// The registry that leads, as it named itself when it took the lock ("" when unknown).
  std::string leader() {
    try {
      auto r = query("SELECT registry FROM dde_registry_leader WHERE lock = " + std::string(lock_key));
      return PQntuples(r.get()) == 1 ? PQgetvalue(r.get(), 0, 0) : "";
    } catch (const std::exception&) {
      return "";  // no table yet: the leader has not set up the store
    }
  }

  result query(const std::string& sql, const std::vector<std::string>& params = {}) {
    std::vector<const char*> values;
    for (auto& p : params) values.push_back(p.c_str());
    result r(PQexecParams(conn_.get(), sql.c_str(), int(values.size()), nullptr, values.data(), nullptr,
                          nullptr, 0));
    auto status = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
      throw std::runtime_error(name() + ": " + trimmed(PQerrorMessage(conn_.get())));
    return r;
  }

  std::string url_;
  std::string self_;
  std::unique_ptr<PGconn, conn_closer> conn_;
  bool leading_ = false;
};

}  // namespace

std::unique_ptr<state_store> open_postgres_store(const std::string& url, const std::string& self) {
  return std::make_unique<postgres_store>(url, self);
}

}  // namespace dde::registry
