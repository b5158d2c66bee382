// registry_role: when a registry acts and when it stands by, driven by a scripted store (the real
// PostgreSQL store and two registry processes are tested in tests/integration/registry_pair_test.cpp).
#include "registry_role.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <stdexcept>

namespace dde::registry {
namespace {

/// A shared store whose `lead` answers come from a script (the last answer repeats).
struct scripted_store : state_store {
  std::deque<lead_result> answers;
  lead_result last{false, "not scripted", {}};
  std::string name() const override { return "scripted store"; }
  bool shared() const override { return true; }
  lead_result lead() override {
    if (!answers.empty()) {
      last = answers.front();
      answers.pop_front();
    }
    return last;
  }
  std::vector<remembered_node> load() override { return {}; }
  void save(const remembered_node&) override {}
  void forget(const std::string&) override {}
};

/// The hooks' calls, in order: "activate" and "step down: <why>".
struct recorded {
  std::vector<std::string> calls;
  bool fail_activation = false;
  registry_role::hooks hooks() {
    return {[this] {
              calls.push_back("activate");
              if (fail_activation) throw std::runtime_error("the store's rows are not JSON");
            },
            [this](const std::string& why) { calls.push_back("step down: " + why); }};
  }
};

TEST(RegistryRole, WithoutAStoreOrWithItsOwnTheRegistryIsActiveFromItsFirstPoll) {
  recorded r;
  registry_role role(nullptr, r.hooks());
  EXPECT_FALSE(role.active());
  EXPECT_FALSE(role.polls());
  role.poll();
  EXPECT_TRUE(role.active());
  role.poll();
  EXPECT_EQ(r.calls, std::vector<std::string>{"activate"}) << "activated once";
  EXPECT_EQ(role.status()["role"], "active");
}

TEST(RegistryRole, AStandbyWaitsNamingTheLeaderThenTakesOverAndStepsDownWhenItLosesTheLock) {
  scripted_store store;
  store.answers = {{false, "another registry leads", "http://r1:8000"},
                   {false, "another registry leads", "http://r1:8000"},
                   {true, {}, {}},
                   {true, {}, {}},
                   {false, "lost the lock: server closed the connection", {}},
                   {true, {}, {}}};
  recorded r;
  registry_role role(&store, r.hooks());
  EXPECT_TRUE(role.polls());
  role.poll();
  role.poll();
  EXPECT_FALSE(role.active());
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(role.standby_reason(),
            "this registry is a standby (another registry leads); the active registry is http://r1:8000");
  auto status = role.status();
  EXPECT_EQ(status["role"], "standby");
  EXPECT_EQ(status["leader"], "http://r1:8000");
  EXPECT_EQ(status["store"], "scripted store");

  role.poll();  // took the lock
  EXPECT_TRUE(role.active());
  role.poll();  // still holds it
  EXPECT_EQ(r.calls, std::vector<std::string>{"activate"});
  EXPECT_EQ(role.status()["role"], "active");
  EXPECT_FALSE(role.status().contains("leader"));

  role.poll();  // the connection broke
  EXPECT_FALSE(role.active());
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[1], "step down: lost the lock: server closed the connection");
  role.poll();  // and back
  EXPECT_TRUE(role.active());
  EXPECT_EQ(r.calls.back(), "activate");
  EXPECT_EQ(r.calls.size(), 3u);
}

TEST(RegistryRole, ATakeOverThatCannotLoadTheStateStepsDownAndTriesAgainAtTheNextPoll) {
  scripted_store store;
  store.answers = {{true, {}, {}}};
  recorded r;
  r.fail_activation = true;
  registry_role role(&store, r.hooks());
  role.poll();
  EXPECT_FALSE(role.active()) << "acting without the remembered nodes would forget them";
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[1], "step down: cannot take over: the store's rows are not JSON");
  EXPECT_NE(role.standby_reason().find("cannot take over"), std::string::npos);
  r.fail_activation = false;
  role.poll();
  EXPECT_TRUE(role.active());
}

TEST(RegistryRole, AStoreOfItsOwnThatCannotBeLoadedStopsTheStart) {
  struct broken_store : scripted_store {
    bool shared() const override { return false; }
  } store;
  store.answers = {{true, {}, {}}};  // a store of its own always grants the lead
  recorded r;
  r.fail_activation = true;
  registry_role role(&store, r.hooks());
  EXPECT_THROW(role.poll(), std::runtime_error);
  EXPECT_FALSE(role.active());
}

}  // namespace
}  // namespace dde::registry
