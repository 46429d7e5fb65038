// ReportServer: the daemon's end of the order reporters' channel
// (docs/report.md): an abstract-namespace Unix stream socket
// "@clairfs-report.<pid>.<16 hex digits>", served by one thread that polls the
// listener and every connection, reads what is there without blocking, and
// feeds each connection's bytes to its ReportedOrders::Connection.
//
// Only connections of the daemon's own user are kept (SO_PEERCRED), at most
// ReportLimits::max_connections at once (more are closed at accept; both
// counted as refused). A connection whose frames break the protocol or pass
// the memory bound is closed; the first such error of the daemon is logged
// once, each is counted; what it reported before stays. A sender holds at
// most one frame in the decoder, whatever it sends.
//
// Start, Stop and name() are called from one thread (the owner's); the
// serving thread touches only its own connections and the (thread-safe)
// ReportedOrders, which must outlive the server.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/status.hpp"
#include "fs/report/report_limits.hpp"
#include "fs/report/reported_orders.hpp"

namespace clairfs::fs {

class ReportServer {
 public:
  ReportServer(ReportedOrders* orders, ReportLimits limits);
  ~ReportServer();  // Stop()
  ReportServer(const ReportServer&) = delete;
  ReportServer& operator=(const ReportServer&) = delete;

  // Binds and listens on a fresh name (name() is set from here on);
  // connections wait in the backlog until Start. No thread is started, so a
  // process may still fork safely. IOError naming the call that failed.
  Status Listen();
  // Listens if not yet, and starts the serving thread. IOError as Listen;
  // InvalidArgument when started twice.
  Status Start();
  // Wakes the thread, joins it and closes the listener and every connection.
  // Idempotent.
  void Stop();
  // "@clairfs-report.<pid>.<hex>" once listening, "" before.
  const std::string& name() const { return name_; }

 private:
  struct Conn {
    int fd = -1;
    std::unique_ptr<ReportedOrders::Connection> orders;
  };
  void Run(std::stop_token stop);
  void Accept(std::vector<Conn>* conns);
  // Reads once from `c`; false when it is to be closed (its end, an error).
  bool Serve(Conn* c);
  void CloseConn(Conn* c, const Status& why);

  ReportedOrders* const orders_;
  const ReportLimits limits_;
  std::string name_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // an eventfd: Stop's signal to the thread
  std::jthread thread_;
};

}  // namespace clairfs::fs
