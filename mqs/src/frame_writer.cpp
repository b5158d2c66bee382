#include "frame_writer.hpp"

namespace dde::mqs {

frame_writer::frame_writer()
    : gauge_(mqs_metrics::process().registry().gauge(
          "dde_mqs_publish_unwritten_bytes",
          "Bytes of publish frames waiting for room in the broker socket (a broker that blocks publishers "
          "holds them there).")) {}

void frame_writer::connected(const amqp_session& session) {
  if (session.plain())
    batch_ = std::make_unique<publish_frames>(session.frame_max());
  else
    batch_.reset();
}

void frame_writer::clear() {
  if (batch_) batch_->clear();  // at-most-once messages in it are lost with the connection
  unsent_.clear();
  count();
}

std::string frame_writer::flush(amqp_session& session) {
  if (!batch_ || batch_->empty()) return {};
  std::size_t written = 0;
  auto error = session.write_frames(batch_->bytes(), nonblocking_ ? &written : nullptr);
  if (error.empty() && nonblocking_ && written < batch_->bytes().size())
    unsent_.append(batch_->bytes(), written);
  batch_->clear();
  count();
  return error;
}

std::string frame_writer::write_unsent(amqp_session& session) {
  if (unsent_.empty()) return {};
  std::size_t written = 0;
  auto error = session.write_frames(unsent_, &written);
  if (!error.empty()) return error;
  unsent_.erase(0, written);
  count();
  return {};
}

}  // namespace dde::mqs
