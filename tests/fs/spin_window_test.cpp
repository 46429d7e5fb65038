// SpinWindow: the reading thread's look-before-sleeping window follows the
// gaps between requests (fs/fuse/spin_window.hpp).
#include "fs/fuse/spin_window.hpp"

#include <catch2/catch.hpp>

using namespace clairfs::fs;
using us = SpinWindow::us;

TEST_CASE("max 0 never looks, whatever the gaps", "[spin]") {
  SpinWindow w(us{0});
  for (int i = 0; i < 100; ++i) w.Observe(us{i % 3}, false);
  CHECK(w.current() == us{0});
}

TEST_CASE("gaps shorter than max grow the window to max by doubling", "[spin]") {
  SpinWindow w(us{1000});
  CHECK(w.current() == us{0});  // starts asleep: an idle daemon costs nothing
  w.Observe(us{300}, false);
  CHECK(w.current() == SpinWindow::kStart);
  w.Observe(us{300}, false);
  CHECK(w.current() == 2 * SpinWindow::kStart);
  for (int i = 0; i < 20; ++i) w.Observe(us{300}, false);
  CHECK(w.current() == us{1000});  // never past max
}

TEST_CASE("a request found while looking leaves the window as it is", "[spin]") {
  SpinWindow w(us{1000});
  for (int i = 0; i < 4; ++i) w.Observe(us{500}, false);
  const us before = w.current();
  REQUIRE(before > us{0});
  for (int i = 0; i < 10; ++i) w.Observe(us{5}, true);
  CHECK(w.current() == before);
}

TEST_CASE("gaps longer than max halve the window, then stop the looking", "[spin]") {
  SpinWindow w(us{1000});
  for (int i = 0; i < 20; ++i) w.Observe(us{200}, false);
  REQUIRE(w.current() == us{1000});
  w.Observe(us{5000}, false);
  CHECK(w.current() == us{500});
  int spells = 1;
  while (w.current() > us{0}) {
    w.Observe(us{5000}, false);
    ++spells;
    REQUIRE(spells < 20);
  }
  CHECK(spells == 6);  // 1000 -> 500 -> 250 -> 125 -> 62 -> 31 -> 15, below 16: 0
  // A gap exactly max long could have been caught: it grows again.
  w.Observe(us{1000}, false);
  CHECK(w.current() == SpinWindow::kStart);
}

TEST_CASE("a max below the starting window is still the bound", "[spin]") {
  SpinWindow w(us{5});
  w.Observe(us{3}, false);
  CHECK(w.current() == us{5});
  w.Observe(us{4}, false);
  CHECK(w.current() == us{5});
  w.Observe(us{50}, false);
  CHECK(w.current() == us{0});
}
