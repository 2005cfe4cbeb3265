/// A Core Data XML store document around `objects` (`doctype` before the root, `info` inside `databaseInfo`).
public func coreDataDocument(_ objects: String, doctype: String = "", info: String? = nil) -> String {
    """
    <?xml version="1.0" standalone="yes"?>
    \(doctype)
    <database>
        <databaseInfo>
            <version>134481920</version>
            <UUID>D1E2667A-3268-45DB-8AA0-DF69A046A0F1</UUID>
            <nextObjectID>10</nextObjectID>
            <metadata></metadata>\(info ?? "")
        </databaseInfo>
    \(objects)
    </database>
    """
}
