// RAOPCipher: AirPlay 1's audio encryption (`et=1`, the AirPort Express's): a fresh AES-128 key and IV per session,
// the key wrapped with RSA-OAEP for the receivers' well-known key, and each packet's whole 16-byte blocks in CBC.

import COpenSSL
import Foundation

/// One session's AES key and IV, and how the ANNOUNCE carries them.
final class RAOPCipher: @unchecked Sendable {
    // Safety: `context` is used under the streamer's lock only (one packet at a time).
    private let key: [UInt8]
    private let iv: [UInt8]
    private let context: OpaquePointer
    /// `a=rsaaeskey:` and `a=aesiv:` for the SDP.
    let sdpLines: [String]

    /// The public key of AirPlay 1 receivers (Apple's AirPort Express key, which every AirPlay 1 receiver holds the
    /// private half of): a 2048-bit modulus, exponent 65537.
    private static let modulus = Data(base64Encoded: "59dE8qLieItsH1WgjrcFRKj6eUWqi+bGLOX1HL3U3GhC/j0Qg90u3sG/1CUtwC5vOYvfDmFI6oSFXi5ELabWJmT2dKHzBJKa3k9ok+8t9ucRqMd6DZHJ2YCCLlDRKSKv6kDqnw4UwPdpOMXziC/AMj3Z/lUVX1G7WSHCAWKf1zNS1eLvqr+boEjXuBOitnZ/bDzPHrTOZz0Dew0uowxf/+sG+NCK3eQJVxqcaJ/vEHKIVd2M+5qL71yJQ+87X6oV3eaYvt3zWZYD6z5vYTcrtij2VZ9Zmni/UAaHqn9JdsBWLUEpVviYnhimNVvYFZeCXg/IdTQ+x4IRdiXNv5hEew==")!

    /// A new key and IV.
    /// - Throws: `LocalFailure` when OpenSSL cannot make or wrap them.
    init() throws {
        var key = [UInt8](repeating: 0, count: 16), iv = [UInt8](repeating: 0, count: 16)
        guard RAND_bytes(&key, 16) == 1, RAND_bytes(&iv, 16) == 1, let context = EVP_CIPHER_CTX_new() else {
            throw LocalFailure(description: "OpenSSL made no AES key")
        }
        self.key = key
        self.iv = iv
        self.context = context
        let wrapped: Data
        do {
            wrapped = try Self.wrap(key)
        } catch {
            EVP_CIPHER_CTX_free(context)
            throw error
        }
        sdpLines = ["a=rsaaeskey:" + Self.unpadded(wrapped), "a=aesiv:" + Self.unpadded(Data(iv))]
    }

    deinit { EVP_CIPHER_CTX_free(context) }

    /// `payload` with its whole 16-byte blocks encrypted (AES-128-CBC from the session's IV each time), the rest clear.
    func encrypt(_ payload: Data) -> Data {
        let whole = payload.count & ~15
        guard whole > 0 else { return payload }
        var output = [UInt8](repeating: 0, count: whole + 16)
        var written: Int32 = 0
        let done = payload.withUnsafeBytes { input -> Bool in
            EVP_EncryptInit_ex(context, EVP_aes_128_cbc(), nil, key, iv) == 1
                && EVP_CIPHER_CTX_set_padding(context, 0) == 1
                && EVP_EncryptUpdate(context, &output, &written, input.bindMemory(to: UInt8.self).baseAddress, Int32(whole)) == 1
        }
        guard done, Int(written) == whole else { return payload }
        return Data(output[0..<whole]) + payload.dropFirst(whole)
    }

    /// The key, RSA-OAEP (SHA-1) encrypted for the receivers' public key.
    private static func wrap(_ key: [UInt8]) throws -> Data {
        // SubjectPublicKeyInfo for an RSA key of 256 bytes: the fixed DER around the modulus and the exponent.
        let der = Data([0x30, 0x82, 0x01, 0x22, 0x30, 0x0D, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01, 0x05, 0x00,
                        0x03, 0x82, 0x01, 0x0F, 0x00, 0x30, 0x82, 0x01, 0x0A, 0x02, 0x82, 0x01, 0x01, 0x00])
            + modulus + Data([0x02, 0x03, 0x01, 0x00, 0x01])
        let publicKey = der.withUnsafeBytes { bytes -> OpaquePointer? in
            var pointer: UnsafePointer<UInt8>? = bytes.bindMemory(to: UInt8.self).baseAddress
            return d2i_PUBKEY(nil, &pointer, bytes.count)
        }
        guard let publicKey, let context = EVP_PKEY_CTX_new(publicKey, nil) else { throw LocalFailure(description: "OpenSSL cannot read the AirPlay key") }
        defer {
            EVP_PKEY_CTX_free(context)
            EVP_PKEY_free(publicKey)
        }
        var length = 0
        guard EVP_PKEY_encrypt_init(context) == 1, EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_OAEP_PADDING) == 1,
              EVP_PKEY_encrypt(context, nil, &length, key, key.count) == 1 else {
            throw LocalFailure(description: "OpenSSL cannot wrap the AES key")
        }
        var output = [UInt8](repeating: 0, count: length)
        guard EVP_PKEY_encrypt(context, &output, &length, key, key.count) == 1 else { throw LocalFailure(description: "OpenSSL cannot wrap the AES key") }
        return Data(output[0..<length])
    }

    /// Base64 without the trailing `=`, as AirPlay senders write it.
    private static func unpadded(_ data: Data) -> String {
        var text = data.base64EncodedString()
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }
}
