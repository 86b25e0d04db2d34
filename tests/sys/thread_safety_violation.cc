// Not compiled into any target: tests/sys/thread_safety_check.py compiles it
// with clang's -Wthread-safety and expects it to fail, proving the check sees
// a GUARDED_BY field read without its lock.
#include "sys/mutex.h"

namespace ortgpu {

class Counter {
 public:
  void Add() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    ++n_;
  }
  int Read() const { return n_; }  // the violation: mu_ is not held

 private:
  mutable Mutex mu_;
  int n_ GUARDED_BY(mu_) = 0;
};

int Use() {
  Counter c;
  c.Add();
  return c.Read();
}

}  // namespace ortgpu
