import Foundation

/// A thread of its own for one remote call: the call's task runs its jobs here instead of on the shared cooperative
/// pool, so a remote that blocks its thread (a hung network file system, a synchronous client library waiting on a
/// socket) holds this thread alone and never the few threads every other task of the process needs.
///
/// The thread ends once ``finish()`` is called and the jobs given before it have run; a call that never returns
/// keeps its thread, and nothing else.
final class CallThread: TaskExecutor, @unchecked Sendable {
    // Guarded by `condition`.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var finished = false

    init(name: String) {
        let thread = Thread { [self] in loop() }
        thread.name = name
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Lets the thread end once its queued jobs have run.
    func finish() {
        condition.lock()
        finished = true
        condition.signal()
        condition.unlock()
    }

    private func loop() {
        while true {
            condition.lock()
            while jobs.isEmpty && !finished { condition.wait() }
            guard !jobs.isEmpty else {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
