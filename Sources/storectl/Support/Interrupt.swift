import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

private let interruptRequested = Atomic<Bool>(false)

/// Ctrl-C handling: the first SIGINT asks the running operation to stop at its next progress report (it then
/// removes what it staged); a second one ends the process at once.
enum Interrupt {
    static func install() {
        // A parent may have started us with SIGINT blocked (signal masks are inherited); unblock it so Ctrl-C and
        // `kill -INT` reach the handler.
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        signal(SIGINT) { _ in
            if interruptRequested.exchange(true, ordering: .relaxed) {
                signal(SIGINT, SIG_DFL)
                raise(SIGINT)
            }
        }
    }

    static var wasRequested: Bool { interruptRequested.load(ordering: .relaxed) }

    /// Throws ``StoreAPI/StoreError/cancelled`` (through the operation's progress handler) once Ctrl-C was pressed.
    static func check() throws {
        if wasRequested { throw CancellationError() }
    }
}
