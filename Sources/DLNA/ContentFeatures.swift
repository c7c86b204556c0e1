// ContentFeatures: how route serves an item, in DLNA's words — the `contentFeatures.dlna.org` header of route's
// media server and the fourth field of the DIDL-Lite `protocolInfo` a renderer is handed. One definition, so that the
// two cannot say different things.

/// DLNA's description of how an item is served.
public enum DLNAContentFeatures {
    /// The features for an item of `mimeType`. A file: byte seek (OP=01), not converted (CI=0); a converted stream: time
    /// seek only (OP=10), converted (CI=1); a live stream: no seek at all (OP=00). Flags: streaming transfer, background
    /// transfer, connection stalling. Uncompressed PCM (`audio/L16`) names its profile, LPCM, as DLNA asks.
    public static func of(mimeType: String, converted: Bool, live: Bool = false) -> String {
        let profile = mimeType.lowercased().hasPrefix("audio/l16") ? "DLNA.ORG_PN=LPCM;" : ""
        let operations = live ? "00" : converted ? "10" : "01"
        return profile + "DLNA.ORG_OP=\(operations);DLNA.ORG_CI=\(converted ? 1 : 0);DLNA.ORG_FLAGS=01700000000000000000000000000000"
    }
}
