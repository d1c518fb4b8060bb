/**
 * Archives written by a real fwup (1.16.0, built from fwup-home/fwup 6f3bf79), with what `fwup -m` printed for
 * them and the public key that `fwup --verify` accepted. Reference data for the readers under test.
 */

const fromBase64 = (lines: string[]): Buffer => Buffer.from(lines.join(''), 'base64');

/** `fwup -c -s fwup-key.priv`: a signed archive with one 15-byte resource, `payload.bin`. */
export const FWUP_SIGNED = {
  fw: fromBase64([
    'UEsDBAoACAAAAAAAIQAAAAAAQAAAAEAAAAARABQAbWV0YS5jb25mLmVkMjU1MTlVVAEAAHV4CwABBAAAAAAEAAAAAI0hW4OREBQo',
    'v5Oa2/1as05dWK396j7CS1+ily4YjgCl0XQnUKtVzUme1c0Kr9ClG5HNH5EjupNMi/lc9TjbJQdQSwcI4WIvkkAAAABAAAAAUEsD',
    'BBQACAAIAMkmdl0AAAAAAAAAAFwBAAAJABgAbWV0YS5jb25mVVQFAAF6dQJrdXgLAAEEAAAAAAQAAAAAdU+7joMwEOz5Cst1QDwN',
    'FC5OSnXfECla2+tgxWC0mKBTlH8/UHLlabeZnRnN7IgR0pmCWXWUBsdw/YBkPBiDiyY3Rxcmyb/YIWDW0bgBIX9LHkjLQRdZmVXv',
    'E6xxCCT5N0zILvyMjwtn5/DnmD1EG2iUNLv64yA9uIg6roQSDiTqxDqPKeESVtLI+Aw/PoDJlJs4eyYep1scZNEkysMdS5WWjZA9',
    'NJi3QvTKgtKd2LevyrxtoRNVrm3dlrqpG2iNFkZ1tmsN9oWtlOoRcA99JRGWO+PrfCMweCSF6f8Wdp28W6J8lieC7brR/sUpfyXH',
    '/AJQSwcIqwFwGPIAAABcAQAAUEsDBBQACAAIAAAAIQAAAAAAAAAAAA8AAAAQABQAZGF0YS9wYXlsb2FkLmJpblVUAQAAdXgLAAEE',
    'AAAAAAQAAAAAy0jNyclXSMssyi1PLErlAgBQSwcIhrB4LxEAAAAPAAAAUEsBAgoDCgAIAAAAAAAhAOFiL5JAAAAAQAAAABEAFAAA',
    'AAAAAAAAAKSBAAAAAG1ldGEuY29uZi5lZDI1NTE5VVQBAAB1eAsAAQQAAAAABAAAAABQSwECFAMUAAgACADJJnZdqwFwGPIAAABc',
    'AQAACQAYAAAAAAAAAAAApIGTAAAAbWV0YS5jb25mVVQFAAF6dQJrdXgLAAEEAAAAAAQAAAAAUEsBAhQDFAAIAAgAAAAhAIaweC8R',
    'AAAADwAAABAAFAAAAAAAAAAAAKSB1AEAAGRhdGEvcGF5bG9hZC5iaW5VVAEAAHV4CwABBAAAAAAEAAAAAFBLBQYAAAAAAwADAPQA',
    'AAA3AgAAAAA=',
  ]),
  metaConf: fromBase64([
    'bWV0YS1wcm9kdWN0PWRlbW9fcHJvZHVjdAptZXRhLWRlc2NyaXB0aW9uPSJBIGRlbW8gZmlybXdhcmUiCm1ldGEtdmVyc2lvbj0x',
    'LjIuMwptZXRhLWF1dGhvcj0iSmFuZSBcIkRldlwiIERvZSIKbWV0YS1wbGF0Zm9ybT1ycGk0Cm1ldGEtYXJjaGl0ZWN0dXJlPWFh',
    'cmNoNjQKZmlsZS1yZXNvdXJjZSAicGF5bG9hZC5iaW4iIHsKbGVuZ3RoPTE1CmJsYWtlMmItMjU2PTlhNWUwNzY2OWJmYWJjODZj',
    'ODY5MzIwNzdhODYzMGNmNDcyYzU0NWE3ZGM2ZGI4Zjg3ZGU5MWYzYmI5ZWFlNjQKfQp0YXNrICJ1cGdyYWRlIiB7Cm9uLXJlc291',
    'cmNlICJwYXlsb2FkLmJpbiIgewpmdW5saXN0PXsyLHJhd193cml0ZSwwfQp9Cn0K',
  ]),
  signature: fromBase64([
    'jSFbg5EQFCi/k5rb/VqzTl1Yrf3qPsJLX6KXLhiOAKXRdCdQq1XNSZ7VzQqv0KUbkc0fkSO6k0yL+Vz1ONslBw==',
  ]),
  publicKey: 'RLJXMC7ONzRTmi8iw9b1ac0B2FiXT7AJsVTVpCXxl/I=',
  uuid: 'ab6a41b6-e04c-59ab-c318-535a9e571228',
  metadata: {
    tool: 'fwup',
    product: 'demo_product',
    description: 'A demo firmware',
    version: '1.2.3',
    author: 'Jane "Dev" Doe',
    platform: 'rpi4',
    architecture: 'aarch64',
    vcsIdentifier: null,
    misc: null,
    creationDate: '2026-11-22T04:54:18Z',
    fwupVersion: null,
    uuid: null,
    nickname: null,
  },
} as const;

/**
 * An unsigned archive from a richer fwup.conf (defines, mbr, u-boot environment, several tasks), whose meta.conf
 * values need quoting and escaping: a tab, a backslash, a non-ASCII character, braces, `#` and `//`.
 */
export const FWUP_RICH = {
  fw: fromBase64([
    'UEsDBBQACAAIABondl0AAAAAAAAAAB8FAAAJABgAbWV0YS5jb25mVVQFAAEUdgJrdXgLAAEEAAAAAAQAAAAAlVTJjtQwED2Tr7AM',
    'BxBJT+xs3Ug5IHHhwmkQHEZqlZ1yt9XZsJ0ewai/gitfx5fgLDP0LGLExbJTrnpLldOgg6g3XTVIV9JPaI5oyQdsOho0Y6hCK43u',
    'ne7akn5utewqJL9//STQVgSIA/Fi3AmQB1uD3ZOrqyl0YbrORdp/ePV1KXVEY6cyfBWv4sjIFXsrBl1Xq2y5AYPbd6akl3skC5VL',
    'hGaJ9jU41ZmmNL2OlwQj99qhdIPBEkyzAEkb6Qpbp5VGUxYilolgyNUcbrSVJR3Xd+RGGJBoT6Qkr3sw2No3IZFd04AlL8l+FHRx',
    'QSZlaGmgdI2RQdsNRiKhPz42sENKboIa253blywLRA0H5CLiWV5m+TqP0yzNi0Ku85RDkfJsI3iVqGKNCrjcYIUxQCoKYImMMVEg',
    'sgxjzCRnIjg9RBxdVXalm90ZahLH8T1cxmShYOMl5yxVrBgR11AJzNgGU8krqDDbKAGQFJyzKitYnqpNkaQxZ5t17nEbYQj1SwQj',
    'kLfG6XEGCI3Hs6g7eYg6pSy6Mk+Ws+yG1pVF4VED973HkvFAeMKlMwP6mqfAgT0Q6v3ta3STcV0b6VY7v1NDW2vryhseetzttfGN',
    'DRcKYRIqcNvmoGyYJ+EEEfJwGKtvZY1j544hnc6R39IwXYKe4MNQO03WVl1vQTp9xBB8Kd2qLqRfPKhud+SKWjcodUXpyNpzfKrn',
    'd4RncjNhz26+8SjxfuvO1Bq4XpKLIuHp6cypod8Z36vV1ASD3+aUNKR+P2iD0SzrCEaDqJH+W6c4PW33rP3zhDWq/9vt97f6lc/y',
    'b+Es7b8MfsaMCmv/LudY5O24nazJj8fRec6YH/rnXLwjpU3XNv6PQM54Ppxjlt+bYzY+gz9QSwcIKg6KqZkCAAAfBQAAUEsDBBQA',
    'CAAIAAAAIQAAAAAAAAAAAA8AAAALABQAZGF0YS96SW1hZ2VVVAEAAHV4CwABBAAAAAAEAAAAAMtOLcpLzVHIzE1MT9XT4wIAUEsH',
    'CL5GgygRAAAADwAAAFBLAwQUAAgACAAAACEAAAAAAAAAAAC4CwAADwAUAGRhdGEvcm9vdGZzLmltZ1VUAQAAdXgLAAEEAAAAAAQA',
    'AAAA7cExAQAAAMKg9U9tDQ+gAACAdwNQSwcIDVuG2hQAAAC4CwAAUEsBAhQDFAAIAAgAGid2XSoOiqmZAgAAHwUAAAkAGAAAAAAA',
    'AAAAAKSBAAAAAG1ldGEuY29uZlVUBQABFHYCa3V4CwABBAAAAAAEAAAAAFBLAQIUAxQACAAIAAAAIQC+RoMoEQAAAA8AAAALABQA',
    'AAAAAAAAAACkgegCAABkYXRhL3pJbWFnZVVUAQAAdXgLAAEEAAAAAAQAAAAAUEsBAhQDFAAIAAgAAAAhAA1bhtoUAAAAuAsAAA8A',
    'FAAAAAAAAAAAAKSBRgMAAGRhdGEvcm9vdGZzLmltZ1VUAQAAdXgLAAEEAAAAAAQAAAAAUEsFBgAAAAADAAMA7QAAAKsDAAAAAA==',
  ]),
  metaConf: fromBase64([
    'bWV0YS1wcm9kdWN0PSJOZXJ2ZXMgRGVtbyIKbWV0YS1kZXNjcmlwdGlvbj0iVW5pY29kZSDinJMgYW5kIGEgdGFiCWFuZCBiYWNr',
    'c2xhc2ggXFwgYW5kIC9yb290LWlzaCAkWCIKbWV0YS12ZXJzaW9uPSIyLjAuMC1yYy4xK2J1aWxkLjUiCm1ldGEtYXV0aG9yPSJU',
    'aGUgTmVydmVzIFRlYW0iCm1ldGEtcGxhdGZvcm09cnBpMAptZXRhLWFyY2hpdGVjdHVyZT1hcm0KbWV0YS12Y3MtaWRlbnRpZmll',
    'cj03YjBjM2IxZTJmCm1ldGEtbWlzYz0ibWlzYzoge2JyYWNlc30gPSAocGFyZW5zKSwgY29tbWFzICMgaGFzaCAvLyBzbGFzaGVz',
    'IgpmaWxlLXJlc291cmNlICJ6SW1hZ2UiIHsKbGVuZ3RoPTE1CmJsYWtlMmItMjU2PTU2ODYwNDU0Njc3Yzg2NDJhNzQyNTliMmQz',
    'Zjc4ZWZhMmM5ZWRlMGFhNGI3YTEzYzBlM2ZhYjU1ZTBlNWMyMWIKfQpmaWxlLXJlc291cmNlICJyb290ZnMuaW1nIiB7Cmxlbmd0',
    'aD0zMDAwCmJsYWtlMmItMjU2PTExYzdmYTkxZTI2MTRmMTdiMmQzOGFkYmU1MTllNGMyZGFkZTU5ZmJhYTM3MjIxZDU3MTY0Zjk3',
    'MzQwMjE5ODYKfQptYnIgIm1ici1hIiB7CnBhcnRpdGlvbiAiMCIgewpibG9jay1vZmZzZXQ9NjMKYmxvY2stY291bnQ9NzcyNjEK',
    'dHlwZT0xMgpib290PXRydWUKfQp9CnRhc2sgImNvbXBsZXRlIiB7Cm9uLWluaXQgewpmdW5saXN0PXsyLG1icl93cml0ZSwibWJy',
    'LWEiLDMsZmF0X21rZnMsNjMsNzcyNjEsMix1Ym9vdF9jbGVhcmVudiwidWJvb3QtZW52Iiw0LHVib290X3NldGVudiwidWJvb3Qt',
    'ZW52IixuZXJ2ZXNfZndfYWN0aXZlLGEsMixpbmZvLCJXcml0aW5nIFwic3R1ZmZcIiJ9Cn0Kb24tcmVzb3VyY2UgInpJbWFnZSIg',
    'ewpmdW5saXN0PXszLGZhdF93cml0ZSw2Myx6SW1hZ2V9Cn0Kb24tcmVzb3VyY2UgInJvb3Rmcy5pbWciIHsKZnVubGlzdD17Mixy',
    'YXdfd3JpdGUsNzczMjR9Cn0KfQp0YXNrICJ1cGdyYWRlLmEiIHsKcmVxbGlzdD17NCwicmVxdWlyZS11Ym9vdC12YXJpYWJsZSIs',
    'InVib290LWVudiIsbmVydmVzX2Z3X2FjdGl2ZSxifQpvbi1pbml0IHsKZnVubGlzdD17MixpbmZvLCJVcGdyYWRpbmcgcGFydGl0',
    'aW9uIEEifQp9Cm9uLWZpbmlzaCB7CmZ1bmxpc3Q9ezQsdWJvb3Rfc2V0ZW52LCJ1Ym9vdC1lbnYiLG5lcnZlc19md19hY3RpdmUs',
    'YX0KfQpvbi1yZXNvdXJjZSAicm9vdGZzLmltZyIgewpkZWx0YS1zb3VyY2UtcmF3LW9mZnNldD03NzMyNApkZWx0YS1zb3VyY2Ut',
    'cmF3LWNvdW50PTEwMApmdW5saXN0PXsyLHJhd193cml0ZSw3NzMyNH0KfQp9CnVib290LWVudmlyb25tZW50ICJ1Ym9vdC1lbnYi',
    'IHsKYmxvY2stb2Zmc2V0PTE2CmJsb2NrLWNvdW50PTE2Cn0K',
  ]),
  uuid: '5562019e-7131-5b5e-5dfe-a4ea91c8590c',
  metadata: {
    tool: 'fwup',
    product: 'Nerves Demo',
    description: 'Unicode \u2713 and a tab\tand backslash \\ and /root-ish $X',
    version: '2.0.0-rc.1+build.5',
    author: 'The Nerves Team',
    platform: 'rpi0',
    architecture: 'arm',
    vcsIdentifier: '7b0c3b1e2f',
    misc: 'misc: {braces} = (parens), commas # hash // slashes',
    creationDate: '2026-11-22T04:56:52Z',
    fwupVersion: null,
    uuid: null,
    nickname: null,
  },
} as const;
