import StoreAPI

extension Schema {
    /// The schema the model types describe: one entity per type, inverses completed from whichever side names
    /// them.
    public init(models: [any PersistentModel.Type]) throws {
        var entities = models.map { $0.entityDescription }
        let byName = Dictionary(entities.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { a, _ in a })
        for e in entities.indices {
            for r in entities[e].relationships {
                guard let inverse = r.inverse, let d = byName[r.destination],
                      let j = entities[d].relationships.firstIndex(where: { $0.name == inverse }),
                      entities[d].relationships[j].inverse == nil
                else { continue }
                entities[d].relationships[j].inverse = r.name
            }
        }
        try self.init(entities: entities)
    }

    /// Checks that every model type matches its entity in this schema (an Xcode model or a JSON schema the app
    /// ships), so that a misspelt or retyped property is found when the store opens, not when a record is read.
    ///
    /// - Throws: ``StoreError/invalidArgument(_:)`` listing every entity and property that differs.
    public func check(models: [any PersistentModel.Type]) throws {
        var problems: [String] = []
        for type in models {
            problems += ModelSchemaCheck.problems(type.entityDescription, in: self)
        }
        guard problems.isEmpty else {
            throw StoreError.invalidArgument("the model types do not match the schema: " + problems.joined(separator: "; "))
        }
    }
}

/// The differences between a model type's entity and the schema's entity of that name.
enum ModelSchemaCheck {
    static func problems(_ model: EntityDescription, in schema: Schema) -> [String] {
        guard let entity = schema.entity(named: model.name) else {
            return ["entity '\(model.name)' is not in the schema"]
        }
        var problems: [String] = []
        let name = model.name
        for a in model.attributes {
            guard let s = entity.attribute(a.name) else {
                problems.append("'\(name).\(a.name)' is not an attribute in the schema")
                continue
            }
            if !compatible(a.type, s.type) {
                problems.append("'\(name).\(a.name)' is \(s.type.rawValue) in the schema, \(a.type.rawValue) in the type")
            }
            if s.isOptional && !a.isOptional && s.defaultValue == nil {
                problems.append("'\(name).\(a.name)' is optional in the schema but not in the type")
            }
        }
        for r in model.relationships {
            guard let s = entity.relationship(r.name) else {
                problems.append("'\(name).\(r.name)' is not a relationship in the schema")
                continue
            }
            if s.destination != r.destination {
                problems.append("'\(name).\(r.name)' leads to \(s.destination) in the schema, \(r.destination) in the type")
            }
            if s.isToMany != r.isToMany {
                problems.append("'\(name).\(r.name)' is \(s.isToMany ? "to-many" : "to-one") in the schema")
            } else if s.isOrdered != r.isOrdered {
                problems.append("'\(name).\(r.name)' is \(s.isOrdered ? "ordered" : "unordered") in the schema")
            }
        }
        let declared = Set(model.attributes.map(\.name))
        for s in entity.attributes where !s.isOptional && s.defaultValue == nil && !declared.contains(s.name) {
            problems.append("'\(name).\(s.name)' is required in the schema but the type has no property for it")
        }
        return problems
    }

    /// Integer widths are interchangeable (values are converted when they fit); other types must be the same.
    private static func compatible(_ model: AttributeType, _ schema: AttributeType) -> Bool {
        let integers: Set<AttributeType> = [.integer16, .integer32, .integer64]
        if integers.contains(model) && integers.contains(schema) { return true }
        if model == .binary && schema == .transformable || model == .transformable && schema == .binary { return true }
        return model == schema
    }
}
