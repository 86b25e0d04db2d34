// Clang's thread-safety annotations (-Wthread-safety), after leveldb's
// port/thread_annotations.h: which mutex guards a field (GUARDED_BY), which
// a function needs held (REQUIRES) or must not hold (EXCLUDES), and which
// functions take and give back a lock (ACQUIRE, RELEASE). Clang checks them
// at compile time; other compilers see empty macros. The check that fails
// the build when they are broken: tests/sys/thread_safety_check.py (CTest
// ThreadSafetyAnnotations). The mutex type they name: sys/mutex.h.
// Each macro is defined unless defined already (Abseil's legacy header,
// which gRPC includes, defines some of them the same way).
// https://clang.llvm.org/docs/ThreadSafetyAnalysis.html
#pragma once

#if defined(__clang__)
#define ORTGPU_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define ORTGPU_THREAD_ANNOTATION(x)
#endif

// A type that is a lock (Mutex).
#ifndef CAPABILITY
#define CAPABILITY(x) ORTGPU_THREAD_ANNOTATION(capability(x))
#endif
// A type that holds a lock for its lifetime (MutexLock).
#ifndef SCOPED_CAPABILITY
#define SCOPED_CAPABILITY ORTGPU_THREAD_ANNOTATION(scoped_lockable)
#endif
// The field is read and written only with the mutex held.
#ifndef GUARDED_BY
#define GUARDED_BY(x) ORTGPU_THREAD_ANNOTATION(guarded_by(x))
#endif
// What the pointer points to is read and written only with the mutex held.
#ifndef PT_GUARDED_BY
#define PT_GUARDED_BY(x) ORTGPU_THREAD_ANNOTATION(pt_guarded_by(x))
#endif
// Mutexes taken in this order.
#ifndef ACQUIRED_AFTER
#define ACQUIRED_AFTER(...) ORTGPU_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#endif
#ifndef ACQUIRED_BEFORE
#define ACQUIRED_BEFORE(...) ORTGPU_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#endif
// The caller holds the mutex (exclusively) when calling.
#ifndef REQUIRES
#define REQUIRES(...) ORTGPU_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#endif
#ifndef REQUIRES_SHARED
#define REQUIRES_SHARED(...) ORTGPU_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#endif
// The function takes the mutex and returns with it held.
#ifndef ACQUIRE
#define ACQUIRE(...) ORTGPU_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#endif
// The function takes the mutex shared (a reader) and returns with it held.
#ifndef ACQUIRE_SHARED
#define ACQUIRE_SHARED(...) ORTGPU_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#endif
// The function gives the mutex back (the caller held it).
#ifndef RELEASE
#define RELEASE(...) ORTGPU_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#endif
#ifndef RELEASE_SHARED
#define RELEASE_SHARED(...) ORTGPU_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#endif
// The function returns `result` when it took the mutex.
#ifndef TRY_ACQUIRE
#define TRY_ACQUIRE(...) ORTGPU_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#endif
// The caller must not hold the mutex (the function takes it).
#ifndef EXCLUDES
#define EXCLUDES(...) ORTGPU_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#endif
// Asserts at run time, and tells the analysis, that the mutex is held.
#ifndef ASSERT_CAPABILITY
#define ASSERT_CAPABILITY(x) ORTGPU_THREAD_ANNOTATION(assert_capability(x))
#endif
// The function returns a reference to the mutex.
#ifndef RETURN_CAPABILITY
#define RETURN_CAPABILITY(x) ORTGPU_THREAD_ANNOTATION(lock_returned(x))
#endif
// Turns the analysis off for one function; say why beside it.
#ifndef NO_THREAD_SAFETY_ANALYSIS
#define NO_THREAD_SAFETY_ANALYSIS ORTGPU_THREAD_ANNOTATION(no_thread_safety_analysis)
#endif
