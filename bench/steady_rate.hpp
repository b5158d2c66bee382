#pragma once
// The rate a consumer sustains after its first second, one definition for the raw client
// (dde-raw-amqp consume's steady_rate) and the benchmark suite (DDE's consumers' stats).

namespace dde::bench {

/// `n` messages over `seconds`, `first_second` of them in the first second (a burst, reported
/// apart): the rate over the rest; 0 when less than half a second follows the first.
inline double steady_rate(double n, double first_second, double seconds) {
  const double after = seconds - 1.0;
  return after >= 0.5 ? (n - first_second) / after : 0.0;
}

}  // namespace dde::bench
