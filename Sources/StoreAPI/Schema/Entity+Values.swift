extension Entity {
    /// The attribute values of a new record of this entity: `values` by name, converted to their attributes'
    /// types, and every attribute `values` leaves out at its default. What ``StoreContext/insert(_:_:globalID:into:)``
    /// and ``StoreContext/insertBatch(_:_:globalIDs:into:)`` store.
    ///
    /// Throws ``StoreError/unknownProperty(entity:property:)`` for a name that is not a stored attribute and
    /// ``StoreError/typeMismatch(entity:property:expected:got:)`` for a value that does not convert.
    func attributeValues(_ values: [String: StoreValue]) throws -> [StoreValue] {
        if values.isEmpty { return blankAttributes }
        // A new array of the blanks, then the values in place. Not a copy of `blankAttributes` made unique (the
        // runtime's generic array copy) nor `Array(unsafeUninitializedCapacity:)` (its allocation looks the array
        // type up every time): each cost more than converting the whole row.
        var result: [StoreValue] = []
        result.reserveCapacity(blankAttributes.count)
        for blank in blankAttributes { result.append(blank) }
        try result.withUnsafeMutableBufferPointer { slots in
            for (name, value) in values {
                guard let i = attributeIndex(name) else { throw StoreError.unknownProperty(entity: self.name, property: name) }
                let type = attributeTypes[i]
                if value.fits(type) {
                    slots[i] = value
                } else if let converted = value.coerced(to: type) {
                    slots[i] = converted
                } else {
                    throw StoreError.typeMismatch(entity: self.name, property: name, expected: type, got: value.type?.rawValue ?? "nil")
                }
            }
        }
        return result
    }

    /// A new record's attribute values from values in attribute order (`nil`: the attribute's default), each
    /// converted to its attribute's type as ``attributeValues(_:)`` converts named values.
    func attributeValues(ordered values: [StoreValue?]) throws -> [StoreValue] {
        guard values.count == attributes.count else {
            throw StoreError.invalidArgument("\(values.count) attribute values for the \(attributes.count) attributes of \(name)")
        }
        var result: [StoreValue] = []
        result.reserveCapacity(values.count)
        for (i, value) in values.enumerated() {
            guard let value else {
                result.append(blankAttributes[i])
                continue
            }
            let type = attributeTypes[i]
            if value.fits(type) {
                result.append(value)
            } else if let converted = value.coerced(to: type) {
                result.append(converted)
            } else {
                throw StoreError.typeMismatch(entity: name, property: attributes[i].name, expected: type,
                                              got: value.type?.rawValue ?? "nil")
            }
        }
        return result
    }

    /// A new record's attribute values from a row holding every attribute's value in order: the row itself when
    /// every value has its attribute's type, else a copy with the others converted as ``attributeValues(_:)``
    /// converts them.
    func attributeValues(complete row: [StoreValue]) throws -> [StoreValue] {
        guard row.count == attributes.count else {
            throw StoreError.invalidArgument("\(row.count) attribute values for the \(attributes.count) attributes of \(name)")
        }
        guard let first = row.indices.first(where: { !row[$0].fits(attributeTypes[$0]) }) else { return row }
        var result = row
        for i in first..<row.count where !row[i].fits(attributeTypes[i]) {
            guard let converted = row[i].coerced(to: attributeTypes[i]) else {
                throw StoreError.typeMismatch(entity: name, property: attributes[i].name, expected: attributeTypes[i],
                                              got: row[i].type?.rawValue ?? "nil")
            }
            result[i] = converted
        }
        return result
    }

    /// Every attribute's value for a new record that is given none: each attribute's default, in the order of
    /// ``attributes`` (BackendKit SPI: the start of a row for
    /// ``StoreContext/insertWithoutObjects(_:completeAttributeValues:globalIDs:into:)``).
    @_spi(BackendKit) public var newRecordAttributeValues: [StoreValue] { blankAttributes }
}
