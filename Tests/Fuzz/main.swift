// route-fuzz: the fuzz targets of Targets.swift. Built with libFuzzer (`make fuzz`: -sanitize=fuzzer and
// -DROUTE_LIBFUZZER) it hands ROUTE_FUZZ_TARGET to libFuzzer; built plainly (every `swift build`) it replays
// the corpora in Tests/Fuzz/Corpus and then a seeded stream of mutations of them — the short run CI makes.

import Foundation

#if ROUTE_LIBFUZZER
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<CInt>,
                         _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                         _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

let chosen = ProcessInfo.processInfo.environment["ROUTE_FUZZ_TARGET"] ?? ""
guard let target = Targets.all.first(where: { $0.name == chosen }) else {
    FileHandle.standardError.write(Data("set ROUTE_FUZZ_TARGET to one of: \(Targets.all.map(\.name).joined(separator: ", "))\n".utf8))
    exit(2)
}
nonisolated(unsafe) let current = target
var argc = CommandLine.argc
var argv = Optional(CommandLine.unsafeArgv)
exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in
    current.run(data.map { Data(bytes: $0, count: size) } ?? Data())
    return 0
})
#else

/// Replays a target's corpus, then `runs` seeded mutations of it; returns how many inputs ran.
func exercise(_ target: FuzzTarget, runs: Int, seed: UInt64) -> Int {
    let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Corpus/\(target.name)")
    let files = ((try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)) ?? [])
        .sorted { $0.path < $1.path }
    var corpus = files.compactMap { try? Data(contentsOf: $0) }
    if corpus.isEmpty { corpus = [Data()] }
    // ROUTE_FUZZ_DUMP=FILE keeps the input being run there, so the one that crashes can be looked at.
    let dump = ProcessInfo.processInfo.environment["ROUTE_FUZZ_DUMP"].map { URL(fileURLWithPath: $0) }
    func run(_ input: Data) {
        if let dump { try? input.write(to: dump) }
        target.run(input)
    }
    for input in corpus { run(input) }
    var generator = Mutator(seed: seed)
    for _ in 0..<runs { run(generator.mutate(corpus)) }
    return corpus.count + runs
}

/// A small deterministic mutator (xorshift): flips, inserts, deletes, repeats, splices and tokens.
struct Mutator {
    private var state: UInt64
    private static let tokens: [[UInt8]] = ["<", ">", "</", "&", "&#", ";", "\"", "=", ":", "-", ",", "::", "0", "9", "inf", "nan",
                                            "1e308", "99999999999999999999", "bytes=", "npt=", "http://", "uuid:", "\u{0}", "\u{1B}[",
                                            "\u{9B}", "\u{202E}", "<![CDATA[", "<?xml", "<!DOCTYPE", "/m/"].map { Array($0.utf8) }

    init(seed: UInt64) { state = seed == 0 ? 0x9E37_79B9_7F4A_7C15 : seed }

    mutating func next(_ bound: Int) -> Int {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return bound <= 0 ? 0 : Int(state % UInt64(bound))
    }

    mutating func mutate(_ corpus: [Data]) -> Data {
        var bytes = Array(corpus[next(corpus.count)])
        for _ in 0..<(1 + next(4)) {
            let at = next(bytes.count + 1)
            switch next(7) {
            case 0 where !bytes.isEmpty: bytes[min(at, bytes.count - 1)] ^= UInt8(1 << next(8))
            case 1: bytes.insert(UInt8(next(256)), at: at)
            case 2 where !bytes.isEmpty: bytes.removeSubrange(at..<min(bytes.count, at + 1 + next(16)))
            case 3 where !bytes.isEmpty:
                let from = next(bytes.count), length = min(bytes.count - from, 1 + next(32))
                let chunk = Array(bytes[from..<(from + length)])
                for _ in 0..<(1 + next(8)) { bytes.insert(contentsOf: chunk, at: min(at, bytes.count)) }
            case 4:
                let other = Array(corpus[next(corpus.count)])
                bytes.insert(contentsOf: other.prefix(next(other.count + 1)), at: at)
            default: bytes.insert(contentsOf: Self.tokens[next(Self.tokens.count)], at: at)
            }
        }
        return Data(bytes.prefix(256 * 1024))
    }
}

var arguments = Array(CommandLine.arguments.dropFirst())
var runs = 2000
var seed: UInt64 = 1
if let index = arguments.firstIndex(of: "--runs"), index + 1 < arguments.count, let value = Int(arguments[index + 1]) {
    runs = value
    arguments.removeSubrange(index...(index + 1))
}
if let index = arguments.firstIndex(of: "--seed"), index + 1 < arguments.count, let value = UInt64(arguments[index + 1]) {
    seed = value
    arguments.removeSubrange(index...(index + 1))
}
let names = arguments.isEmpty || arguments == ["all"] ? Targets.all.map(\.name) : arguments
for name in names {
    guard let target = Targets.all.first(where: { $0.name == name }) else {
        FileHandle.standardError.write(Data("route-fuzz: no target \"\(name)\"; targets: \(Targets.all.map(\.name).joined(separator: ", "))\n".utf8))
        exit(2)
    }
    let started = ContinuousClock.now
    let count = exercise(target, runs: runs, seed: seed)
    print("\(name): \(count) inputs, no crash (\(ContinuousClock.now - started))  — \(target.summary)")
}
#endif
