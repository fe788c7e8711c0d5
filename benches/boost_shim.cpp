// C shim over boost::signals2 for lumina's benchmarks (feature `boost-bench`, see build.rs).
// The slot body is the same as every other system's: add the argument to a counter with a relaxed
// load and store. operator new is replaced to count C++ heap allocations for the report.
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

#include <boost/signals2.hpp>

static std::atomic<std::uint64_t> g_allocations{0};

void* operator new(std::size_t size) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(size ? size : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {
struct Signal {
    boost::signals2::signal<void(int)> signal;
    std::vector<boost::signals2::connection> connections;
};
}  // namespace

extern "C" {

void* lumina_boost_new() { return new Signal(); }

void lumina_boost_free(void* signal) { delete static_cast<Signal*>(signal); }

std::uint64_t lumina_boost_connect(void* signal, std::atomic<std::uint64_t>* sink) {
    auto* s = static_cast<Signal*>(signal);
    s->connections.push_back(s->signal.connect([sink](int x) {
        sink->store(sink->load(std::memory_order_relaxed) + static_cast<std::uint64_t>(x),
                    std::memory_order_relaxed);
    }));
    return s->connections.size() - 1;
}

void lumina_boost_disconnect(void* signal, std::uint64_t id) {
    auto* s = static_cast<Signal*>(signal);
    if (id < s->connections.size()) s->connections[id].disconnect();
}

void lumina_boost_emit(void* signal, int x) { static_cast<Signal*>(signal)->signal(x); }

std::uint64_t lumina_boost_allocations() {
    return g_allocations.load(std::memory_order_relaxed);
}

}  // extern "C"
