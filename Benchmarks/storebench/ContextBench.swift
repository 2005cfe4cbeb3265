import Foundation
import StoreAPI

/// Inserting through a context and fetching by object ID, on any backend — the figures the references are
/// compared with.
enum ContextBench {
    /// Inserts `count` items through a context, saving (and resetting) every `batch` records. Each batch's value
    /// dictionaries are built before its clock starts (as the reference's inputs are): the figure is the context's
    /// and the store's work. Returns the CPU seconds spent and the object IDs of a sample of the inserted records.
    static func insert(into description: StoreDescription, count: Int, inputs: BenchData.Inputs, batch: Int = 10_000) throws
        -> (seconds: Double, sample: [ObjectID])
    {
        let coordinator = StoreCoordinator(schema: try BenchData.schema())
        try coordinator.addStore(description)
        defer { for s in coordinator.stores { try? coordinator.removeStore(s) } }
        let context = coordinator.newContext()
        var sample: [ObjectID] = []
        let stride = max(1, count / 100_000)
        var seconds = 0.0
        var start = 0
        while start < count {
            let end = min(count, start + batch)
            let values = (start..<end).map { BenchData.values($0, inputs) }
            let (_, s) = try Measure.cpu {
                for i in start..<end {
                    let o = try context.insert("Item", values[i - start])
                    if i % stride == 0 { sample.append(o.objectID) }
                }
                try context.save()
                context.reset()
            }
            // Released after the clock (the reference frees nothing of its inputs inside its timing either).
            withExtendedLifetime(values) {}
            seconds += s
            start = end
        }
        return (seconds, sample)
    }

    /// Inserts `count` items with one ``StoreContext/insertBatch(_:_:globalIDs:into:)`` call (one save, like the
    /// reference's one transaction). The rows are built before the clock starts. Returns the CPU seconds and the
    /// number of items the store then holds.
    static func insertBatch(into description: StoreDescription, count: Int, inputs: BenchData.Inputs) throws -> (seconds: Double, stored: Int) {
        let coordinator = StoreCoordinator(schema: try BenchData.schema())
        try coordinator.addStore(description)
        defer { for s in coordinator.stores { try? coordinator.removeStore(s) } }
        let context = coordinator.newContext()
        let rows = (0..<count).map { BenchData.values($0, inputs) }
        let (_, seconds) = try Measure.cpu { try context.insertBatch("Item", rows) }
        withExtendedLifetime(rows) {}
        return (seconds, try context.count(FetchRequest(entity: "Item")))
    }

    /// Inserts `count` items with one ``StoreContext/insertBatch(_:count:globalIDs:into:row:)`` call, each row's
    /// values set in its closure from the prepared inputs (the way an import hands rows over without building
    /// them all first). Returns the CPU seconds and the number of items the store then holds.
    static func insertBatchRows(into description: StoreDescription, count: Int, inputs: BenchData.Inputs) throws -> (seconds: Double, stored: Int) {
        let coordinator = StoreCoordinator(schema: try BenchData.schema())
        try coordinator.addStore(description)
        defer { for s in coordinator.stores { try? coordinator.removeStore(s) } }
        let context = coordinator.newContext()
        let (_, seconds) = try Measure.cpu {
            try context.insertBatch("Item", count: count) { i, row in try BenchData.set(i, inputs, into: &row) }
        }
        return (seconds, try context.count(FetchRequest(entity: "Item")))
    }

    /// Fetches each ID with a fresh lookup (`object(with:)`, no identity-map hits). Returns seconds.
    static func fetchByID(_ description: StoreDescription, ids: [ObjectID]) throws -> Double {
        let coordinator = StoreCoordinator(schema: try BenchData.schema())
        var d = description
        d.options.createIfMissing = false
        try coordinator.addStore(d)
        defer { for s in coordinator.stores { try? coordinator.removeStore(s) } }
        let context = coordinator.newContext()
        var checksum = 0
        let (_, seconds) = try Measure.cpu {
            for id in ids.shuffledDeterministically() {
                let o = try context.object(with: id)
                checksum &+= Int(truncatingIfNeeded: try o.value(forKey: "number").int64Value ?? 0)
            }
        }
        if checksum == 42 { print("") }  // keep the reads from being optimised away
        return seconds
    }
}

extension Array {
    /// A fixed permutation (a linear-congruential shuffle), so runs are comparable.
    func shuffledDeterministically() -> [Element] {
        var copy = self
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for i in copy.indices.reversed() where i > 0 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            copy.swapAt(i, Int(state >> 33) % (i + 1))
        }
        return copy
    }
}
