// CBuffer: text out of the fixed-size char arrays C calls fill in (getnameinfo, UpnpSubscribe, avahi_address_snprint).

extension String {
    /// The text before the first NUL of `buffer`, as UTF-8 (invalid bytes become U+FFFD).
    public init(cBuffer buffer: [CChar]) {
        self.init(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
