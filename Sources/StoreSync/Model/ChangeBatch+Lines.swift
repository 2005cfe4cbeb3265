import Foundation

/// Format 2 of change files: lines of tab-separated fields, with each entity or key name and each clock stamp written
/// once in a table and named by its number after that.
///
/// ```
/// storesync-changes  2  <peer>  <sequence>  <records>    the header
/// S  <name>                                             a name: entity, attribute or relationship (numbered from 0)
/// C  <wall>  <counter>  <peer>                          a clock stamp (numbered from 0)
/// R  <global ID>  <entity name number>                  a record's change starts
/// D  <stamp number>                                     it was deleted
/// V  <key name number>  <stamp number>  <text>          a stamped value
/// M  <relationship name number>  <target>  <1|0>  <stamp number>  <observed stamp number or nothing>
/// E                                                     the end: a file without it is cut short
/// ```
///
/// Every value of one push carries the same stamp, and in format 1 each repeated it in full (a peer ID per value):
/// the tables make a record's line about as long as its values. Texts escape backslash, tab and newline with a
/// backslash. Readers take format 1 (JSON) files too; a file of any other layout, or damaged in any way, is not
/// read at all.
extension ChangeBatch {
    /// The first field of a format 2 file.
    static let linesMagic = "storesync-changes"

    /// The file's bytes in format 2.
    func encoded() -> Data {
        var writer = ChangeFileWriter(capacity: changes.count)
        for c in changes { writer.add(c) }
        return writer.bytes(peer: peer, sequence: sequence)
    }
}
