import StoreAPI

extension ModelWriter {
    /// What this write does with an inserted model that collides with a stored one (or one inserted earlier in the
    /// write) on a uniqueness constraint (see `MergePolicy`); ``MergePolicy/error`` unless set. With
    /// `.mergeByPropertyObjectTrump`, inserting a `Tag` whose unique label exists updates the stored tag instead
    /// of failing the write.
    public var mergePolicy: MergePolicy {
        get { context.mergePolicy }
        set { context.mergePolicy = newValue }
    }

    /// Inserts a model; if, when the write is saved, it collides with another record on a uniqueness constraint,
    /// `policy` decides (see `MergePolicy`): under any policy but ``MergePolicy/error`` the insert becomes an update
    /// of that record, which keeps its identity — the returned model's ``PersistentModel/persistentID`` then names
    /// a discarded insert, so fetch the record to go on with it:
    ///
    /// ```swift
    /// try await db.write { tx in
    ///     let tag = try tx.insert(Tag(label: "sf"), onConflict: .mergeByPropertyObjectTrump)
    ///     try tx.insert(Book(title: "Excession", pages: 451, tags: [tag.ref]))   // tagged with the stored "sf"
    /// }
    /// ```
    @discardableResult
    public func insert<M: PersistentModel>(_ model: M, onConflict policy: MergePolicy) throws -> M {
        let inserted = try insert(model)
        guard let id = inserted.persistentID else { return inserted }
        try context.setMergePolicy(policy, for: try context.object(with: id.objectID))
        return inserted
    }
}
