// RouteVersion: which release of route this is — what `route --version` says, the Debian package is numbered, and
// NEWS names.

/// route's version.
public enum RouteVersion {
    /// The release this build is (NEWS says what each one changed).
    public static let current = "0.9.0"
}
