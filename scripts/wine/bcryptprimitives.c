/* bcryptprimitives.dll for wine 8, which lacks it: Go 1.24+ programs get
 * their random bytes from ProcessPrng. Built by scripts/wine-test.sh. */
#include <windows.h>
#include <ntsecapi.h>

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
	while (len > 0) {
		ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len;
		if (!RtlGenRandom(data, n))
			return FALSE;
		data += n;
		len -= n;
	}
	return TRUE;
}
