// A shared object that is not a DDE worker: no entry points.
extern "C" __attribute__((visibility("default"))) int not_a_worker() { return 42; }
