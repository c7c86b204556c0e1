// NeighbourTable: the hardware (MAC) address the kernel has learnt for an IP address on the LAN — an identity
// that routes of different protocols to one device share (a TV's Cast receiver and its DLNA renderer).

import FoundationEssentials

/// Reads the kernel's IPv4 neighbour table (`/proc/net/arp`).
public enum NeighbourTable {
    /// The MAC address (`aa:bb:cc:dd:ee:ff`, lower case) of `host` (an IPv4 address), once the kernel has
    /// talked to it; nil for loopback, for addresses it has not resolved, and for incomplete entries.
    public static func mac(for host: String, table path: String = "/proc/net/arp") -> String? {
        guard !host.hasPrefix("127."), let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        return mac(for: host, in: text)
    }

    /// The MAC address of `host` in the text of `/proc/net/arp`.
    public static func mac(for host: String, in table: String) -> String? {
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            // IP address, HW type, Flags, HW address, Mask, Device; flags 0x0 is an incomplete entry.
            guard fields.count >= 4, fields[0] == host, fields[2] != "0x0" else { continue }
            let mac = fields[3].lowercased()
            guard mac != "00:00:00:00:00:00", mac.split(separator: ":").count == 6 else { return nil }
            return mac
        }
        return nil
    }
}
