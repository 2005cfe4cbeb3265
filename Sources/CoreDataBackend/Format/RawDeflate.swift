import CZlib
import Foundation

/// Why compressed bytes did not inflate.
@_spi(BackendKit) public struct InflateError: Error, Sendable, CustomStringConvertible {
    /// What is wrong, in a few words.
    public let message: String

    public var description: String { "raw DEFLATE: \(message)" }
}

/// Raw DEFLATE (RFC 1951: no zlib header, no checksum), the compression of Core Data's `Z_MODELCACHE`, through zlib.
@_spi(BackendKit) public enum RawDeflate {
    /// The most bytes ``inflate(_:limit:)`` produces unless told otherwise. A compiled model is a few kilobytes to a
    /// few hundred; anything near this is a decompression bomb, not a model.
    public static let defaultLimit = 64 << 20

    /// Decompresses `input`, which must be one complete raw DEFLATE stream, refusing to produce more than `limit`
    /// bytes.
    public static func inflate(_ input: [UInt8], limit: Int = defaultLimit) throws(InflateError) -> [UInt8] {
        guard !input.isEmpty else { throw InflateError(message: "no data") }
        var stream = z_stream()
        // windowBits −15: a raw stream with a 32 KiB window (a positive value would expect a zlib header).
        guard storeapi_inflate_init2(&stream, -15) == Z_OK else { throw InflateError(message: "zlib did not initialise") }
        defer { inflateEnd(&stream) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        var status: Int32 = Z_OK
        let result: Result<[UInt8], InflateError> = input.withUnsafeBufferPointer { inBuf in
            stream.next_in = UnsafeMutablePointer(mutating: inBuf.baseAddress)
            stream.avail_in = uInt(inBuf.count)
            while true {
                let produced: Int = chunk.withUnsafeMutableBufferPointer { out in
                    stream.next_out = out.baseAddress
                    stream.avail_out = uInt(out.count)
                    status = CZlib.inflate(&stream, Z_NO_FLUSH)
                    return out.count - Int(stream.avail_out)
                }
                if produced > 0 {
                    guard output.count + produced <= limit else {
                        return .failure(InflateError(message: "inflates to more than \(limit) bytes (a decompression bomb?)"))
                    }
                    output += chunk[0..<produced]
                }
                switch status {
                case Z_STREAM_END:
                    guard stream.avail_in == 0 else {
                        return .failure(InflateError(message: "\(stream.avail_in) bytes after the end of the stream"))
                    }
                    return .success(output)
                case Z_OK:
                    continue
                case Z_BUF_ERROR:
                    // No progress possible: the input ended before the stream did.
                    if produced == 0 { return .failure(InflateError(message: "truncated: the stream has no end")) }
                case Z_DATA_ERROR:
                    let why = stream.msg.map { String(cString: $0) } ?? "invalid data"
                    return .failure(InflateError(message: why))
                case Z_MEM_ERROR:
                    return .failure(InflateError(message: "zlib ran out of memory"))
                default:
                    return .failure(InflateError(message: "zlib status \(status)"))
                }
            }
        }
        return try result.get()
    }

    /// Compresses `input` as one raw DEFLATE stream (what Core Data writes into `Z_MODELCACHE`).
    public static func deflate(_ input: [UInt8], level: Int32 = Z_DEFAULT_COMPRESSION) throws(InflateError) -> [UInt8] {
        var stream = z_stream()
        guard storeapi_deflate_init2(&stream, level, -15) == Z_OK else { throw InflateError(message: "zlib did not initialise") }
        defer { deflateEnd(&stream) }
        let bound = Int(deflateBound(&stream, uLong(input.count)))
        var output = [UInt8](repeating: 0, count: bound)
        let status: Int32 = input.withUnsafeBufferPointer { inBuf in
            output.withUnsafeMutableBufferPointer { out in
                stream.next_in = UnsafeMutablePointer(mutating: inBuf.baseAddress)
                stream.avail_in = uInt(inBuf.count)
                stream.next_out = out.baseAddress
                stream.avail_out = uInt(out.count)
                return CZlib.deflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { throw InflateError(message: "zlib status \(status) while compressing") }
        output.removeSubrange(Int(stream.total_out)...)
        return output
    }
}
