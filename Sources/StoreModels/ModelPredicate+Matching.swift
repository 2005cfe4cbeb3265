import StoreAPI

extension ModelPredicate {
    /// The string property matches the regular expression `pattern` as a whole (`MATCHES`); `[c]` makes the
    /// expression case-insensitive, `[d]` folds diacritics. Like every string comparison with or without options,
    /// it runs in SQL on a SQLite store.
    public static func matches(
        _ keyPath: KeyPath<Model, String>, _ pattern: String, options: ComparisonOptions = []
    ) -> ModelPredicate {
        compare(keyPath, .matches, pattern, options: options)
    }

    /// The string property is one of `values`, compared with case or diacritics folded (`IN[cd]`).
    public static func isIn(
        _ keyPath: KeyPath<Model, String>, _ values: [String], options: ComparisonOptions
    ) -> ModelPredicate {
        ModelPredicate(key(keyPath).map { key in
            .comparison(.keyPath(key.components), .in, .list(values.map { .string($0) }), options)
        })
    }
}
