import Foundation
@_spi(BackendKit) import StoreAPI

/// Runs `python3 -c program args…`, feeding `input` on stdin; `nil` when python3 cannot be started.
func runPython(_ program: String, _ arguments: [String] = [], input: [UInt8] = []) throws -> (status: Int32, out: Data)? {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = ["python3", "-c", program] + arguments
    let stdin = Pipe(), stdout = Pipe()
    p.standardInput = stdin
    p.standardOutput = stdout
    p.standardError = FileHandle.nullDevice
    do { try p.run() } catch { return nil }
    // Inputs are small (under a pipe's buffer), so writing them all before reading cannot deadlock.
    stdin.fileHandleForWriting.write(Data(input))
    try? stdin.fileHandleForWriting.close()
    let out = stdout.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    // `env` exits 127 when python3 is missing.
    if p.terminationStatus == 127 { return nil }
    return (p.terminationStatus, out)
}

/// A hand-assembled binary plist: `objects` are the encoded objects in order; the trailer is computed unless the
/// caller overrides a field, so hostile variants differ from a valid file in one place only.
func assemblePlist(
    _ objects: [[UInt8]], top: UInt64 = 0, refSize: UInt8 = 1, offsetSize: UInt8 = 1,
    objectCount: UInt64? = nil, tableOffset: UInt64? = nil, offsets: [UInt64]? = nil
) -> [UInt8] {
    var out = Array("bplist00".utf8)
    var realOffsets: [UInt64] = []
    for o in objects {
        realOffsets.append(UInt64(out.count))
        out += o
    }
    let table = UInt64(out.count)
    for o in offsets ?? realOffsets {
        for i in stride(from: Int(offsetSize) - 1, through: 0, by: -1) { out.append(UInt8(truncatingIfNeeded: o >> (8 * UInt64(i)))) }
    }
    out += [0, 0, 0, 0, 0, 0, offsetSize, refSize]
    for v in [objectCount ?? UInt64(objects.count), top, tableOffset ?? table] {
        for i in stride(from: 7, through: 0, by: -1) { out.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) }
    }
    return out
}
