#include "dde/core/net/elastic_threads.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cstring>
#include <string>

#include "dde/core/daemon.hpp"
#include "dde/core/metrics.hpp"

namespace dde::net {
namespace {

clockid_t cpu_clock(std::thread& t) {
  clockid_t id{};
  return ::pthread_getcpuclockid(t.native_handle(), &id) == 0 ? id : clockid_t(-1);
}

/// Whether the thread whose /proc/.../stat is `fd` sleeps (state S or D): blocked, not runnable.
bool sleeping(int fd) {
  char buf[512];
  auto n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return false;
  buf[n] = '\0';
  const char* paren = std::strrchr(buf, ')');  // the name may hold spaces and parentheses
  return paren && paren[1] == ' ' && (paren[2] == 'S' || paren[2] == 'D');
}

/// Whether the thread whose /proc/.../wchan is `fd` sleeps in epoll_wait (do_epoll_wait since Linux
/// 5.x, ep_poll before): Asio's reactor thread blocks there only with no handler queued.
bool in_epoll_wait(int fd) {
  char buf[64];
  auto n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return false;
  buf[n] = '\0';
  return std::strncmp(buf, "do_epoll_wait", 13) == 0 || std::strncmp(buf, "ep_poll", 7) == 0;
}

/// Opens /proc/thread-self/`what` for the calling thread into `slot`.
void open_own(std::atomic<int>& slot, const char* what) {
  slot.store(::open((std::string("/proc/thread-self/") + what).c_str(), O_RDONLY | O_CLOEXEC));
}

}  // namespace

elastic_threads::elastic_threads(boost::asio::io_context& io, elastic_options options)
    : io_(io),
      options_(options),
      counts_(
          metrics_registry::process().gauge(
              options.metric_prefix + "_threads_running",
              "Threads that run the process's io_context now (--threads at most)."),
          metrics_registry::process().counter(options.metric_prefix + "_thread_joins_total",
                                              "Times a parked thread joined the first because it lagged.")) {
  options_.threads = std::max(1, options_.threads);
  options_.period = std::max(options_.period, std::chrono::milliseconds(1));
}

elastic_threads::~elastic_threads() {
  if (!threads_.empty()) io_.stop();  // an owner that did not stop it: the threads end with it
  join();
}

void elastic_threads::start() {
  guard_ = std::make_unique<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>>(
      io_.get_executor());
  clocks_.assign(std::size_t(options_.threads), clockid_t(-1));
  stats_ = std::vector<std::atomic<int>>(std::size_t(options_.threads));
  wchans_ = std::vector<std::atomic<int>>(std::size_t(options_.threads));
  for (auto& fd : stats_) fd.store(-1);
  for (auto& fd : wchans_) fd.store(-1);
  // Each thread names itself and opens its own files (/proc/thread-self names the thread that opens it).
  auto set_up = [this](int k) {
    dde::name_this_thread(options_.thread_name + "-" + std::to_string(k));
    open_own(stats_[std::size_t(k)], "stat");
    open_own(wchans_[std::size_t(k)], "wchan");
  };
  for (int k = 0; k < options_.threads; ++k) {
    if (k == 0 || options_.lag.count() == 0) {
      set_running(1);
      threads_.emplace_back([this, k, set_up] {
        set_up(k);
        io_.run();
        set_running(-1);
      });
    } else {
      threads_.emplace_back([this, k, set_up] {
        set_up(k);
        run_helper(k);
      });
    }
    clocks_[std::size_t(k)] = cpu_clock(threads_.back());
  }
}

void elastic_threads::wait_stopped() {
  if (!threads_.empty() && threads_.front().joinable()) threads_.front().join();
  join();
}

void elastic_threads::join() {
  {
    std::lock_guard l(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  guard_.reset();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
  for (auto* files : {&stats_, &wchans_})
    for (auto& fd : *files)
      if (int f = fd.exchange(-1); f >= 0) ::close(f);
}

bool elastic_threads::wait(std::chrono::nanoseconds d) {
  std::unique_lock l(mutex_);
  return changed_.wait_for(l, d, [this] { return stopping_; });
}

std::chrono::nanoseconds elastic_threads::cpu_of(int k) const {
  std::chrono::nanoseconds sum{0};
  for (int i = 0; i < k; ++i) {
    timespec ts{};
    if (clocks_[std::size_t(i)] != clockid_t(-1) && ::clock_gettime(clocks_[std::size_t(i)], &ts) == 0)
      sum += std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
  }
  return sum;
}

bool elastic_threads::any_sleeping(int k) const {
  for (int i = 0; i < k && std::size_t(i) < stats_.size(); ++i) {
    int fd = stats_[std::size_t(i)].load();
    if (fd < 0 || sleeping(fd)) return true;  // unknown: as before, a late probe is a lag
  }
  return false;
}

bool elastic_threads::all_in_reactor(int k) const {
  for (int i = 0; i < k && std::size_t(i) < wchans_.size(); ++i) {
    int fd = wchans_[std::size_t(i)].load();
    if (fd < 0 || !in_epoll_wait(fd)) return false;
  }
  return k > 0;
}

bool elastic_threads::lagging(int k, int& idle_looks) {
  using clock = std::chrono::steady_clock;
  counts_.looks.fetch_add(1, std::memory_order_relaxed);
  if (all_in_reactor(k)) {
    // Idle: nothing is queued for them. Look again later, without waking them.
    auto longer = options_.period * (1 << std::min(idle_looks++, 16));
    wait(std::max<std::chrono::nanoseconds>(options_.period,
                                            std::min<std::chrono::nanoseconds>(longer, options_.idle_wait)));
    return false;
  }
  idle_looks = 0;
  counts_.probes.fetch_add(1, std::memory_order_relaxed);
  auto ran = std::make_shared<std::atomic<bool>>(false);
  auto cpu0 = cpu_of(k);
  auto posted = clock::now();
  boost::asio::post(io_, [ran] { ran->store(true); });
  if (wait(std::min<std::chrono::nanoseconds>(options_.lag, options_.period))) return false;
  if (!ran->load()) {
    // A thread that blocks in a handler (it sleeps) is helped after `lag`, not a period; so is one
    // that ran a handler on a core meanwhile (a quarter of the wait: a loaded machine shares its
    // cores). Threads runnable but hardly on a core waited for one, and one more would wait too.
    if (any_sleeping(k)) return true;
    return 4 * (cpu_of(k) - cpu0) >= clock::now() - posted;
  }
  if (wait(options_.period - (clock::now() - posted))) return false;
  auto span = clock::now() - posted;
  return double((cpu_of(k) - cpu0).count()) >= options_.busy * double(k) * double(span.count());
}

void elastic_threads::set_running(int delta) {
  {
    std::lock_guard l(mutex_);
    counts_.running_metric.set(double(counts_.running.fetch_add(delta) + delta));
  }
  changed_.notify_all();
}

void elastic_threads::run_helper(int k) {
  int idle_looks = 0;
  for (;;) {
    {
      // Helper k looks only while the k threads before it all run the context.
      std::unique_lock l(mutex_);
      changed_.wait(l, [&] { return stopping_ || counts_.running.load() >= k; });
      if (stopping_) return;
    }
    if (!lagging(k, idle_looks)) continue;
    counts_.joins.fetch_add(1, std::memory_order_relaxed);
    counts_.joins_metric.add();
    set_running(1);
    for (auto stay = options_.stay;; stay = std::min(stay * 2, options_.stay * 16)) {
      io_.run_for(stay);
      if (io_.stopped()) return set_running(-1);
      // What this thread deferred in its last handler went to the shared queue without waking
      // anyone: a post from outside the context's threads wakes a thread for it.
      boost::asio::post(io_, [] {});
      // The thread steps out for a period and comes straight back if the lag is still there.
      set_running(-1);
      if (!lagging(k, idle_looks)) break;
      set_running(1);
    }
  }
}

}  // namespace dde::net
