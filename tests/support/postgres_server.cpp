// postgres_server: initdb and postgres from the Debian package, as the postgres user when root.
#include "postgres_server.hpp"

#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace dde::test {
namespace {

/// The newest /usr/lib/postgresql/<major>/bin.
std::filesystem::path server_bin_dir() {
  std::filesystem::path best;
  int best_major = -1;
  std::error_code ec;
  for (auto& entry : std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
    int major = std::atoi(entry.path().filename().c_str());
    if (major > best_major && std::filesystem::exists(entry.path() / "bin" / "postgres")) {
      best_major = major;
      best = entry.path() / "bin";
    }
  }
  if (best.empty())
    throw std::runtime_error(
        "no PostgreSQL server in /usr/lib/postgresql: install the postgresql package "
        "(deploy/install-deps.sh does)");
  return best;
}

}  // namespace

postgres_server::postgres_server(const std::string& name)
    : dir_(fresh_dir("pg-" + name)), data_(dir_ / "data"), port_(free_port()) {
  std::filesystem::create_directories(data_);
  std::filesystem::permissions(data_, std::filesystem::perms::owner_all);
  if (::geteuid() == 0) {
    const passwd* pw = ::getpwnam("postgres");
    if (!pw) throw std::runtime_error("running as root, but there is no postgres user to run PostgreSQL as");
    if (::chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0 ||
        ::chown(data_.c_str(), pw->pw_uid, pw->pw_gid) != 0)
      throw std::runtime_error("cannot give " + dir_.string() + " to the postgres user");
  }
  auto initdb = as_server_user({(server_bin_dir() / "initdb").string(), "-D", data_.string(), "-U", "dde",
                                "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync"});
  child_process run(initdb, dir_ / "initdb.log");
  auto status = run.wait_exit(120s);
  if (!status || *status != 0) throw std::runtime_error("initdb failed:\n" + run.log());
}

postgres_server::~postgres_server() {
  try {
    stop();
  } catch (...) {
  }
}

std::vector<std::string> postgres_server::as_server_user(std::vector<std::string> argv) const {
  if (::geteuid() != 0) return argv;
  std::vector<std::string> out{"setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

void postgres_server::start(std::chrono::milliseconds timeout) {
  if (running()) return;
  // fsync off: a throw-away server. TCP only: no Unix socket (its path under the build tree could pass
  // the 107-byte limit, and /run/postgresql may not exist).
  auto argv = as_server_user({(server_bin_dir() / "postgres").string(), "-D", data_.string(), "-p",
                              std::to_string(port_), "-k", "", "-c", "listen_addresses=127.0.0.1", "-c",
                              "fsync=off", "-c", "max_connections=50"});
  server_ = std::make_unique<child_process>(argv, dir_ / "postgres.log");
  auto conninfo =
      "host=127.0.0.1 port=" + std::to_string(port_) + " user=dde dbname=postgres connect_timeout=2";
  bool up =
      wait_until([&] { return !server_->running() || PQping(conninfo.c_str()) == PQPING_OK; }, timeout, 50ms);
  if (!up || !server_->running())
    throw std::runtime_error("PostgreSQL did not start on port " + std::to_string(port_) + ":\n" +
                             log_tail());
}

void postgres_server::stop() {
  if (!server_ || !server_->running()) return;
  server_->signal(SIGINT);  // fast shutdown: sessions end, transactions roll back
  if (!server_->wait_exit(30s)) server_->kill9();
}

bool postgres_server::running() { return server_ && server_->running(); }

std::string postgres_server::url() const {
  return "postgresql://dde@127.0.0.1:" + std::to_string(port_) + "/postgres";
}

std::string postgres_server::log_tail() const {
  std::ifstream in(dir_ / "postgres.log");
  std::stringstream text;
  text << in.rdbuf();
  auto s = text.str();
  return s.size() > 4000 ? s.substr(s.size() - 4000) : s;
}

}  // namespace dde::test
