package streamwrite.testkms;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.crypto.KeyAccessDeniedException;
import org.apache.parquet.crypto.ParquetCryptoRuntimeException;
import org.apache.parquet.crypto.keytools.KmsClient;

/**
 * A KMS holding master keys in memory, for streamwrite's Spark interop tests.
 *
 * <p>Wraps like parquet-java's test InMemoryKMS and streamwrite's InMemoryKms:
 * {@code base64(nonce[12] || AES-GCM(master key, aad = master key id UTF-8)(key) || tag[16])}.
 * Master keys come from the Hadoop property {@code parquet.encryption.key.list}:
 * {@code "id1:base64key1, id2:base64key2"}.
 */
public class InMemoryTestKms implements KmsClient {
  public static final String KEY_LIST_PROPERTY_NAME = "parquet.encryption.key.list";
  private static final int NONCE_LENGTH = 12;
  private static final int TAG_BITS = 128;
  private static final SecureRandom RANDOM = new SecureRandom();

  private final Map<String, byte[]> masterKeys = new HashMap<>();

  @Override
  public void initialize(
      Configuration configuration, String kmsInstanceID, String kmsInstanceURL, String accessToken) {
    String[] entries = configuration.getTrimmedStrings(KEY_LIST_PROPERTY_NAME);
    if (entries == null || entries.length == 0) {
      throw new ParquetCryptoRuntimeException("No " + KEY_LIST_PROPERTY_NAME + " is set.");
    }
    for (String entry : entries) {
      int colon = entry.indexOf(':');
      if (colon <= 0) {
        throw new ParquetCryptoRuntimeException("A key list entry has no 'id:' prefix.");
      }
      String id = entry.substring(0, colon).trim();
      masterKeys.put(id, Base64.getDecoder().decode(entry.substring(colon + 1).trim()));
    }
  }

  private byte[] masterKey(String id) throws KeyAccessDeniedException {
    byte[] key = masterKeys.get(id);
    if (key == null) {
      throw new KeyAccessDeniedException("Master key '" + id + "' is not in the KMS.");
    }
    return key;
  }

  @Override
  public String wrapKey(byte[] keyBytes, String masterKeyIdentifier)
      throws KeyAccessDeniedException {
    try {
      byte[] nonce = new byte[NONCE_LENGTH];
      RANDOM.nextBytes(nonce);
      Cipher cipher = Cipher.getInstance("AES/GCM/NoPadding");
      cipher.init(
          Cipher.ENCRYPT_MODE,
          new SecretKeySpec(masterKey(masterKeyIdentifier), "AES"),
          new GCMParameterSpec(TAG_BITS, nonce));
      cipher.updateAAD(masterKeyIdentifier.getBytes(StandardCharsets.UTF_8));
      byte[] sealed = cipher.doFinal(keyBytes);
      byte[] out = new byte[NONCE_LENGTH + sealed.length];
      System.arraycopy(nonce, 0, out, 0, NONCE_LENGTH);
      System.arraycopy(sealed, 0, out, NONCE_LENGTH, sealed.length);
      return Base64.getEncoder().encodeToString(out);
    } catch (GeneralSecurityException e) {
      throw new ParquetCryptoRuntimeException("Wrapping with '" + masterKeyIdentifier + "' failed.", e);
    }
  }

  @Override
  public byte[] unwrapKey(String wrappedKey, String masterKeyIdentifier)
      throws KeyAccessDeniedException {
    try {
      byte[] data = Base64.getDecoder().decode(wrappedKey);
      Cipher cipher = Cipher.getInstance("AES/GCM/NoPadding");
      cipher.init(
          Cipher.DECRYPT_MODE,
          new SecretKeySpec(masterKey(masterKeyIdentifier), "AES"),
          new GCMParameterSpec(TAG_BITS, data, 0, NONCE_LENGTH));
      cipher.updateAAD(masterKeyIdentifier.getBytes(StandardCharsets.UTF_8));
      return cipher.doFinal(data, NONCE_LENGTH, data.length - NONCE_LENGTH);
    } catch (GeneralSecurityException e) {
      throw new ParquetCryptoRuntimeException(
          "Unwrapping with '" + masterKeyIdentifier + "' failed.", e);
    }
  }
}
