"""The CUDA every template generates, pinned: a fixed set of configs per registered template,
each source (and its launch) hashed. A refactor of the engine keeps every hash; a change to
a kernel on purpose changes its rows here in the same commit, so the change is seen."""
import hashlib

import pytest

import engine
from engine.ops import TEMPLATES
from engine.workloads import PRESETS, transpose_spec

ARGS = {name: PRESETS[name].args for name in ("C12", "C1", "C8", "D2", "G1", "G2", "G3", "G4", "B-div-b", "B-exp-c-f16",
                                                "B-mul_rsqrt-a", "TC-4096-bf16", "TC-d16x4096-f16",
                                                "TC-d64x14336-tf32", "TC-4096-bf16c", "TC-d16x4096-f16c", "TCC-56-64-64-k3-f16",
                                                "TCC-7-512-512-k3-bf16", "IG-C12", "IG-56-64-256-k1-b16", "WG-C12",
                                                "WG-28-128-128-k3-b32", "WN-C12", "WN-28-128-128-k3-b32")}
ARGS["seed"] = [1, 7, 7, 512, 512, 3, 3, [1, 1], [1, 1]]
ARGS["multiplier-2"] = [["TENSOR", [1, 8, 15, 15], "float32"], ["TENSOR", [8, 2, 3, 3], "float32"], [1, 1],
                        [1, 1, 1, 1], [1, 1], "float32"]
ARGS["transpose-70x45"] = [transpose_spec(70, 45)]

# (task name, workload, config index, sha256 of the source and its launch): each workload's
# default config, then five drawn with numpy's default_rng(12) when the table was made. (The
# custom rows changed once on purpose: sizes are #defined in sorted order, as canonical args
# spell them, so a spec typed in another key order makes the same source. The tensor-core conv's
# split-K rows changed once on purpose: four outputs in one 8-byte store, the GEMM's 16-bit C's;
# its rows changed again at 9d99535: the gathered A finds a step's tap once where block_k divides
# C. After the five draws come wgmma rows: each workload's best the H200 confirmed at 9d99535, and
# for 7² that best's tile with 2 more ring stages in place of split K. The fp32 GEMM's last rows are its TMA
# loaders': the G1, G2 and G3 bests the H200 confirmed at 1f7c89b. The implicit-GEMM conv's rows come first, the
# last three of them K steps of whole channels (step_channels), drawn with default_rng(12) among 40; then the
# Winograd conv's, the last two F(4x4) configs of docs/benchmarks/conv2d-winograd-loop-mix.md, which random
# draws rarely reach; then the unfused Winograd conv's.)
SOURCES = [
    ('conv2d_nchw_implicit_gemm', 'IG-C12', 73457187, 'ae5b8753f2c6d33343042ad9e02c8a36e3d68d6a01c37c7e615a76d3d6373e13'),
    ('conv2d_nchw_implicit_gemm', 'IG-C12', 31840267, '7b6ee61eb84e54a82aa35f47091f666f8756b3a3b70b7b3db2432a4e45c58fee'),
    ('conv2d_nchw_implicit_gemm', 'IG-C12', 87116116, '9ebcbced8e7efc1466be633a8b2209acdd45ed3b4c3a5b18568fd169cbbef5e4'),
    ('conv2d_nchw_implicit_gemm', 'IG-C12', 199805364, '03f0125338e90c4435e0bfc7b049cb63fa5fb412efdeda6d5f70c5bf328a5b0b'),
    ('conv2d_nchw_implicit_gemm', 'IG-C12', 352610862, '79b75537adb71705958f02cb5cdf3ad114465ccd2d18b8dfedacb64ecec86ae8'),
    ('conv2d_nchw_implicit_gemm', 'IG-C12', 239223192, '84b0b4034250414ed0eb5d54ebef27103e262c960aaf9248893f049dbecd75a7'),
    ('conv2d_nchw_implicit_gemm', 'IG-56-64-256-k1-b16', 18621987, 'd6cf41e7c7b3ab55d3f500209dfb0dad8bc02e8f0ba0625fea42fd154b7e4470'),
    ('conv2d_nchw_implicit_gemm', 'IG-56-64-256-k1-b16', 18016267, '7624fa953214bd74734525ad4d32c7ccd994e17e97df57153b4940799d4cd349'),
    ('conv2d_nchw_implicit_gemm', 'IG-56-64-256-k1-b16', 18643511, '1d1dda53c0c8bf5e7f518d5d3ab5b1adb6ad8d139672d5988c00d6f5f46c7f58'),
    ('conv2d_nchw_implicit_gemm', 'IG-56-64-256-k1-b16', 40334496, 'eebd18203b20a9c671fba9a9917306ef81aecb0443c6930d8e99f3398bd1fcba'),
    ('conv2d_nchw_implicit_gemm', 'IG-56-64-256-k1-b16', 967397, '0b494bce2c61876e23593c03ebf7597bd220371f6b0e54f30fc988559d56388c'),
    ('conv2d_nchw_implicit_gemm', 'IG-56-64-256-k1-b16', 35145088, 'c14455731e4a4c8b6abca7dd0c809546c181b8ab3ab4d71382d2d351ceff8db2'),
    ('conv2d_nchw_implicit_gemm', 'IG-C12', 1876827984, '9209429629ca83aeee34b1c5977418a1ddf78c164878402ef60778c6037dd5dc'),
    ('conv2d_nchw_implicit_gemm', 'IG-C12', 1639589112, '8b91775e83e135fde4f84f500e6af41b2bfc6834833cf26adbbd742b6ebb0573'),
    ('conv2d_nchw_implicit_gemm', 'IG-C12', 2001202803, 'f4f8913626e9e1561493000efe500fcf0dce3c9e6aad13e1aa9b855a285f6378'),
    ('conv2d_nchw_winograd_fused', 'WG-C12', 31670, '8ee60fa8a81749715981fb422f00526d51faa1608dde18c344f8a56245b13515'),
    ('conv2d_nchw_winograd_fused', 'WG-C12', 31598, 'fe58d06d1fffd515bb7488fd7f08770799044edf3ebac865a8bd083a77d7ef65'),
    ('conv2d_nchw_winograd_fused', 'WG-C12', 40706, 'c711cf4b61e5cfeda4fb1dba8616ca6ebe04a39f3394fb4cfa9fc62f0837a5b6'),
    ('conv2d_nchw_winograd_fused', 'WG-C12', 40632, '316a2cd0893ca742a705e398c41ee7b667ea35f69d247a29a06a9fdc754f7190'),
    ('conv2d_nchw_winograd_fused', 'WG-C12', 39392, 'c5f70b6d60b8dd69176dcbc6ff330e50ee946aa5c2447222718250a76dc7cbaf'),
    ('conv2d_nchw_winograd_fused', 'WG-C12', 28664, '097e91eb094c702b8a05f30701268ec6dc2fffd71fcea529a0a9c206a4bce7eb'),
    ('conv2d_nchw_winograd_fused', 'WG-28-128-128-k3-b32', 31670, 'f53b42e16082c2db2c106a4617d3a829cc1e909bf0bfc0a5d9e24f91627ab2b1'),
    ('conv2d_nchw_winograd_fused', 'WG-28-128-128-k3-b32', 31598, '03f202a57d7a9137e53f3457a3c192368b08cad4b982386494ff4d10d0f399f3'),
    ('conv2d_nchw_winograd_fused', 'WG-28-128-128-k3-b32', 40706, '16ca7f775a67a1d838501e79c5ac23257f8ee8867efe3396abade3aa28b97666'),
    ('conv2d_nchw_winograd_fused', 'WG-28-128-128-k3-b32', 40632, '01ac97089e150339965049bf5fba2907ce724141a88e27fdc4ac155b675d612c'),
    ('conv2d_nchw_winograd_fused', 'WG-28-128-128-k3-b32', 39392, '8331f5e3ae1cb52a12e9ccb27d7aebdd30a34728aa6a383849c8639fb64a4413'),
    ('conv2d_nchw_winograd_fused', 'WG-28-128-128-k3-b32', 28664, '9fa1732a904da81542414208d390e873f2f5f74c9a42b5484a8c3818128739ba'),
    ('conv2d_nchw_winograd_fused', 'WG-28-128-128-k3-b32', 9849, '8362aa50b1c6883ba82dae8bfa42f09f5e101ebb5ce3d18481a8174daf2a7513'),
    ('conv2d_nchw_winograd_fused', 'WG-28-128-128-k3-b32', 11577, 'bf63cfe05c423ab7eb58be6f96711556e0f0fc6ec16e3ffcbf0585ddcaf8f2d0'),
    ('conv2d_nchw_winograd_nonfused', 'WN-C12', 37783701, 'c53b395c5b03e9a59bc7b2e8fdf425186921efa4189badedd9a56109a592bbc9'),
    ('conv2d_nchw_winograd_nonfused', 'WN-C12', 16916493, '7b3cb6ad762cb6efd2836b6dad0f3ab446a57c4844cc5d29555e4ac0667d4d65'),
    ('conv2d_nchw_winograd_nonfused', 'WN-C12', 5337631, '19e4cc7ad1dc2006db4b0dd7cccac40a6fb28cfcbe41f22ce015af21aa75a474'),
    ('conv2d_nchw_winograd_nonfused', 'WN-C12', 3798212, '5829963a8cd6b4833eb95e812142e41f438b81307363a6a52275def818d5cb1e'),
    ('conv2d_nchw_winograd_nonfused', 'WN-C12', 3815989, '3e2d98711c19eb97767a15927163b8e0f76bc47f310723ecff5017e826e4e4fb'),
    ('conv2d_nchw_winograd_nonfused', 'WN-C12', 33808311, 'fea51f91e3421742e51c3ac73590f775a259af19b16a7598eef81a04e974997c'),
    ('conv2d_nchw_winograd_nonfused', 'WN-28-128-128-k3-b32', 37783701, '2e3c70b7f06817aedb6e70daa87885982824b1542eb00a3a4531ad589d33e4d3'),
    ('conv2d_nchw_winograd_nonfused', 'WN-28-128-128-k3-b32', 16916493, '6c2f9b77ba454fc427f51edc778b507591a7ca097fbc6bae61040eaf417ac753'),
    ('conv2d_nchw_winograd_nonfused', 'WN-28-128-128-k3-b32', 5337631, '5a92d9517953cff07ab0fefa66ba9265d4df531faaac467121245c6a44d36b56'),
    ('conv2d_nchw_winograd_nonfused', 'WN-28-128-128-k3-b32', 3798212, 'e479762f27f8cbcc2a0541236322b3d1c7c876a57996e1c4304ea2689e8b14c9'),
    ('conv2d_nchw_winograd_nonfused', 'WN-28-128-128-k3-b32', 3815989, '42a7a3c19394eba4b5238a1f9b48222f21877c7c6a0821b0f822c25817b33c17'),
    ('conv2d_nchw_winograd_nonfused', 'WN-28-128-128-k3-b32', 33808311, '126aa165f3a1c67d00c382caaf743d03522f8d22143bf586bee39dac277fc57e'),
    ('conv2d_nchw.cuda', 'C12', 681668, '7a5a254823faac92639d035c705a8c697def586d66d3152990a46f0f0adbbdfd'),
    ('conv2d_nchw.cuda', 'C12', 762795, 'ec669a888bdcf99d06bc57d7c5a08678e34b037918f2f6a2558859d34cdf52dd'),
    ('conv2d_nchw.cuda', 'C12', 507801, '2308db403e0d698395b8b790a48c6db731c4e7da39e37dfc3fbd28523745fb18'),
    ('conv2d_nchw.cuda', 'C12', 613395, '059f348301626d1affea2812c28bc6aa04185abb667477a2859acfd0e68b28b5'),
    ('conv2d_nchw.cuda', 'C12', 750372, 'd916b4caa6d58e3752e0f8a9e870f9973d226c6e4477453f3e3091815c112d65'),
    ('conv2d_nchw.cuda', 'C12', 70400, '9a40211a917c988c2bd2a316699118f256444b93cced386d3400705482e9340c'),
    ('conv2d_nchw.cuda', 'C1', 64646286, 'cf8e5b382f7d602e9f1ad12bfe65db338a1e56176e3f54541177e0d1492acfb4'),
    ('conv2d_nchw.cuda', 'C1', 46571127, '8384d9ee7e908c0c51b04231c45081ddbabcc8b95802a1ef1ddd96fddc9c9f13'),
    ('conv2d_nchw.cuda', 'C1', 16158437, 'd047594c849e8f9ddc5fcc327859553f0dcc78782ce00cc933994896da394912'),
    ('conv2d_nchw.cuda', 'C1', 5154967, 'b1ca86886633ae310752580003583cb1a6d1c96261fe53515c090d88d179e05f'),
    ('conv2d_nchw.cuda', 'C1', 56577373, 'c1ed6ffe19a41686d5eee53b9f4c652b3c75804c4d584153cc7587090f130dd5'),
    ('conv2d_nchw.cuda', 'C1', 6975612, '4e4b76d65df8367fc5e64b45e5a027e0156f523ada6054b16fb169c7be01bc7a'),
    ('conv2d_nchw.cuda', 'C8', 1500274, 'bf56cd5f82c1f12c0f22469ffc1737348d7a3c84049f88388c492eab82a45a18'),
    ('conv2d_nchw.cuda', 'C8', 912821, 'c32fbff9366cc950ebd039e0b9e31c3a7e90dd050943eba04d2ebda1df83de91'),
    ('conv2d_nchw.cuda', 'C8', 1250875, '8d9ceb3f461d2018da5f786d7e812f227e33bb8280a6f1472a4bd7b5e6813fda'),
    ('conv2d_nchw.cuda', 'C8', 1151401, '20e35dbedc79b78d0264abafefa333cb20dd0416411422a9a907165bf740b963'),
    ('conv2d_nchw.cuda', 'C8', 1159699, '2d8d52e9497751bc798e81a11a9fac9d36fe8fdca45a6611dc8661429d6661c0'),
    ('conv2d_nchw.cuda', 'C8', 607640, '954d9268241e7ea9c55b7c776027418a2a079ac0648f40c238bb155dd646a7c1'),
    ('conv2d_no_batching', 'seed', 8615748, '0907bd22f60dbb4154dac439ff21bd963eb4dd47d9839277258e3f665f5d6467'),
    ('conv2d_no_batching', 'seed', 7452755, '2d128190b860089a664552a2588ae0829e860d7ddfdd38f928316b412a3d904d'),
    ('conv2d_no_batching', 'seed', 1161600, '22793f904eff7507245ec6f04e927e741d58bb184ff4c73030e1d79f550398cd'),
    ('conv2d_no_batching', 'seed', 7486702, '34962d410db18e46703d9bcb6e3198e46d54dfb39ce54724e9ffb4507e91a921'),
    ('conv2d_no_batching', 'seed', 7232878, '05e1677002e2ecf87bbfe0fd0e28af435d50782c6f56cb9d6a8d2b1a00d21453'),
    ('conv2d_no_batching', 'seed', 1915376, '29e24a493c38f2844b1806b7906d84e61fe63877b694b9b870a9392b5c6eba89'),
    ('depthwise_conv2d_nchw.cuda', 'D2', 2312863, '4c30478b13b7f1b84b8c145f184aeadcd0157b6e5d3d6e045482e758985cf88a'),
    ('depthwise_conv2d_nchw.cuda', 'D2', 2757820, '0e9b56b2300814cb5e16cb5a3aee5c316e83308bd41bd31b8eb39b820526aec8'),
    ('depthwise_conv2d_nchw.cuda', 'D2', 1512113, 'b4fa8d28aedb97c854ce2e6efd77e3e527b86538123cac4f7d503394d7921aa4'),
    ('depthwise_conv2d_nchw.cuda', 'D2', 2210479, 'f3cecb44e8dfa12031398635c1421e42e6afb6f03256c494c995f50eb28a09ac'),
    ('depthwise_conv2d_nchw.cuda', 'D2', 413961, '6da43c5f87349dbc806e4bd573dfbe42130d7c575c0ba7ba74beefa9d1cef0da'),
    ('depthwise_conv2d_nchw.cuda', 'D2', 2345293, '6f2d836cfda091ec1775151ca68637c2f25c23775b373b139a155727dc45401a'),
    ('depthwise_conv2d_nchw.cuda', 'multiplier-2', 40465, 'faefea6419095afdde80ce00911335140a4f5c83904ce5ae5b16fa7cfb3d1756'),
    ('depthwise_conv2d_nchw.cuda', 'multiplier-2', 44261, '1051b72cc39406448708375e50f830ebe32b4aa0496ae6a36b305f470a226475'),
    ('depthwise_conv2d_nchw.cuda', 'multiplier-2', 50268, '0a83d25419ee689e89f0d2af1b90bc07df605e5923b58054c992fc1b7a382f6d'),
    ('depthwise_conv2d_nchw.cuda', 'multiplier-2', 21418, '4c0ef1294c22d6c9ae463e266af840037fa37802062cf5a78dea1fcb1b94d298'),
    ('depthwise_conv2d_nchw.cuda', 'multiplier-2', 23417, '894530299c0191e2baf713a165a18e9221ec6c40f1a7d851da049db21e6ee0f1'),
    ('depthwise_conv2d_nchw.cuda', 'multiplier-2', 11276, '44ee17c9d2eece80f35228e4eb8356a025140012773a2ad546b683004f9995d2'),
    ('gemm', 'G3', 73917987, 'b450107a940b2efc27492c28aa119ab08228235f75a90244ff5fe7f4b8663d5c'),
    ('gemm', 'G3', 31840267, '3d109174bef11b57eb75be4813d74936830b69d557be86a239b78a3411eb9abd'),
    ('gemm', 'G3', 204189093, 'c9439a8c3bf8ff16a8277ac965ff41a3eecf4237b78cc04424f27d275ded4f20'),
    ('gemm', 'G3', 149031422, 'ae010cc83b5c4845a3b53e616d37802047bae0bf8308f8d05c16e9d779425ac4'),
    ('gemm', 'G3', 87116116, '92b862acbf27d5996134e12548552db35c5a815ca0a789b470dbe8a4d323f4a5'),
    ('gemm', 'G3', 277770335, 'ffb2f015f3e856a8a464ab02ccb6136b2c3eba85b1454ba32b20b6a6a9dd766c'),
    ('gemm', 'G4', 73457187, '8d49be96378f5d912cdecba0c5d1c0e5141fea560a9f97f8e59dd11adc307041'),
    ('gemm', 'G4', 31840267, 'b699b3a253e99fcae9bd9b837f41c610f2e45e003129e34a5368630de3a97f49'),
    ('gemm', 'G4', 87116116, '7f6c4d5db292d7250d61604cf25fbc9abce26ff8dfb05fd41084e7a0cdf60bac'),
    ('gemm', 'G4', 199805364, '3fd6776240d26f1045dd25716ae0139ffb548ff3bfdf5763286b984926466970'),
    ('gemm', 'G4', 352610862, '6a7aa623c0d4f6d02511ba79f1e28e2fced566765376079f58124306833b680e'),
    ('gemm', 'G4', 239223192, 'f2a7cccdbad7f45f40d32c06ddf930bde78c5574a1f6d16a4036b6740dec16b1'),
    ('gemm', 'G1', 141675448, '88c6863ffec7e6b23f92063e0abd45788fc7b372665b078ca5bf3a6a01d944fd'),
    ('gemm', 'G2', 140985448, '399de97ce5417480bfb6e03fedf188c0b94f6ed87398893e24554c2b766d264c'),
    ('gemm', 'G3', 1316710037, '0b88e562aabf253e9c5fef3c697f2b64c85bf3a403a676489183a4f30287f325'),
    ('gemm_tensorcore', 'TC-4096-bf16', 3543, '0714e8eacf165011a5033d31d3d44339edcd8ad61894161ddc3f919c7c81478d'),
    ('gemm_tensorcore', 'TC-4096-bf16', 16592, '1de464b743ed84af42270c289bd09cdf9d97fb53155b586b204dd8a7701064cb'),
    ('gemm_tensorcore', 'TC-4096-bf16', 14221, 'cf7ec43b8cd6e1e76e8e48da1386cbc3acead6819502d1127d1497ee7858f67d'),
    ('gemm_tensorcore', 'TC-4096-bf16', 31556, '8bada45ab25c09acf7dcd8854fe1da396626560b506709d9714101a464219b8f'),
    ('gemm_tensorcore', 'TC-4096-bf16', 27892, 'ab7921c31e5dddd45dfa41f89c1e17b3799d1fe449074f7e4203e65db25c3f31'),
    ('gemm_tensorcore', 'TC-4096-bf16', 24611, 'cb06b9058de3546d1cfe3e5de106b30566964c909c6eb6f9e25c2a174fc4dc84'),
    ('gemm_tensorcore', 'TC-d16x4096-f16', 3543, '14eaaebd117457616c72e52f3d42e1d47faaa2fa403e5897c3a11c0332047ffc'),
    ('gemm_tensorcore', 'TC-d16x4096-f16', 864, '74f40fe5113e0e7fa7ba9658bf483415374afd5c7a0955f19fd63ed9fe961342'),
    ('gemm_tensorcore', 'TC-d16x4096-f16', 5546, 'b39a4db5635db5d371868a6fe4c26f206b979b7d6e7e10d62419e383a0a75459'),
    ('gemm_tensorcore', 'TC-d16x4096-f16', 212, 'e6701c518ff64f7dfadbb2d353c0b70498722a5e79cd03ec2334a5e27ec2053f'),
    ('gemm_tensorcore', 'TC-d16x4096-f16', 6454, '4da2dd6dc308875aa90b6d2b3401470b5aeae901eda95d7a5a411577ac8e47d0'),
    ('gemm_tensorcore', 'TC-d16x4096-f16', 1233, '7c2ca710e879213860231169560bee1e3f8847c060da3511ae8302498be505ab'),
    ('gemm_tensorcore', 'TC-d64x14336-tf32', 3543, '9df0e4d8cb7dcd315eb5993787b2f9a611e915236ded18e47f1155a4ddfec3bd'),
    ('gemm_tensorcore', 'TC-d64x14336-tf32', 864, 'e640fcf0e0986b807144a809bd3421c9d4a618fb6f1a87a90a6413c4b12bbf29'),
    ('gemm_tensorcore', 'TC-d64x14336-tf32', 5546, 'f774397447ae506c8ee0878e2dd6f0d28f9726b697452a92cbf5ec6a71a3ef8c'),
    ('gemm_tensorcore', 'TC-d64x14336-tf32', 4531, 'f9cfd6f0fe756482e6f18c5f7a6284e9fce916c73403906059bacea26d8c4da7'),
    ('gemm_tensorcore', 'TC-d64x14336-tf32', 212, 'da3a646ad5b7b2b3df08b9d4f3020f57dcc16a3a64498db61058c5818aab87d9'),
    ('gemm_tensorcore', 'TC-d64x14336-tf32', 14745, '4a498624bffbafeb238c9c593e4807e705d7525aebb787123e6c3b10a8f1df8c'),
    ('gemm_tensorcore', 'TC-4096-bf16c', 3543, '10f9edb73bc7b36bf0c5214ce5e3ec57dac51ebc31e3553aec74530700ae6d6e'),
    ('gemm_tensorcore', 'TC-4096-bf16c', 14221, 'e606277ccf931ac084707a692c796c24bf471f34d26433f483ed1054f8537ce3'),
    ('gemm_tensorcore', 'TC-4096-bf16c', 1782064, '4c368c3f14cf22ca551c40d6c86b46706cfc26ceee4b60b12d49f9bfc2bad70b'),
    ('gemm_tensorcore', 'TC-4096-bf16c', 31560, '884a28472fa4014c1228f38b6fb0aa2b499aecca8db77156efa793ce47bc97c8'),
    ('gemm_tensorcore', 'TC-4096-bf16c', 14628, 'b47387c3b3719ae0d6024079f4c6dfa37ec28a363abcbe503a220595b6c046ad'),
    ('gemm_tensorcore', 'TC-4096-bf16c', 1081, '7d9f72fb4ec3890eb12ad8bd11ec76170be478fc42e7084eb4e42dfa07555529'),
    ('gemm_tensorcore', 'TC-d16x4096-f16c', 3543, 'b02a11ea9af998e5623b0acb8637b20ce99df016baa99d8b92e4734d73e74b46'),
    ('gemm_tensorcore', 'TC-d16x4096-f16c', 1782064, '5373b6362d2f4ff82bb7254bfc7bb228266663a1f8f182591b6ef40412b5d9f7'),
    ('gemm_tensorcore', 'TC-d16x4096-f16c', 1171946, '608cc731cbbcd4d7b2eb3ca8fc0cdc8595349b07967bfcea1a4b01dc9dd37ead'),
    ('gemm_tensorcore', 'TC-d16x4096-f16c', 1172465, 'e0a1b5b734f0fc11498d103c353486a3615183d624ed77541c614eacf47419de'),
    ('gemm_tensorcore', 'TC-d16x4096-f16c', 391562, 'add1e368a3c2e2845b50ce78b74a6c0c14c077d3c7f207fa4c956328ac0cf546'),
    ('gemm_tensorcore', 'TC-d16x4096-f16c', 1081, '8d39f0a145fec6739a4dbd7a6329a67250f2130bf4d391ce79c37150abecf0dc'),
    ('conv2d_nhwc_tensorcore', 'TCC-56-64-64-k3-f16', 694, 'e10ee9c798fd275faeae7cee66d94ff1c2f62d66f86eb51b137fb52eed89ee99'),
    ('conv2d_nhwc_tensorcore', 'TCC-56-64-64-k3-f16', 4161, 'bf1f1a95b10679470973552ceb51ddea6c8617596a914cfff6d0b9baf44d95a6'),
    ('conv2d_nhwc_tensorcore', 'TCC-56-64-64-k3-f16', 390, '20ee8ab971379db4d443082c27288dec783275933dbaa298cfc3875913ee334c'),
    ('conv2d_nhwc_tensorcore', 'TCC-56-64-64-k3-f16', 7091, '2448e7fdd77b613dd01c65a20c6c5ad1df602efdd30092e1f980c6cd99db6113'),
    ('conv2d_nhwc_tensorcore', 'TCC-56-64-64-k3-f16', 12413, '9e32b8b6d0ee5fbde7056cbb47ac464d1b5c15c213e39b8a78306d6c5bd74d45'),
    ('conv2d_nhwc_tensorcore', 'TCC-56-64-64-k3-f16', 1101, 'e2cb916319cd253f530ce1fdd8b5bdfe4517b3f8ec476c2de5de9639d8c05fa4'),
    ('conv2d_nhwc_tensorcore', 'TCC-56-64-64-k3-f16', 166790, '7addce0439b8b1383b296025cfc7ba7ac0934021f13de3ae0791fb58d90ea6c7'),
    ('conv2d_nhwc_tensorcore', 'TCC-7-512-512-k3-bf16', 694, '0a6743773ebe371acf54cc4785ff54cc62d38af6d39d4a978dfa1773eb78f799'),
    ('conv2d_nhwc_tensorcore', 'TCC-7-512-512-k3-bf16', 4161, '1f3d845f07f5a5f5fa3dcc5338e65acfc09eb0a380b0b2b2f85325af519ae762'),
    ('conv2d_nhwc_tensorcore', 'TCC-7-512-512-k3-bf16', 47004, 'd21056ce563f9166b0fd59d2d58d6880a59d9ca5539c07449fe36c8cd0553b88'),
    ('conv2d_nhwc_tensorcore', 'TCC-7-512-512-k3-bf16', 390, '80279d721db4695759f123fa4cd0d2b931949f43a2195860771944a7ac9c03d5'),
    ('conv2d_nhwc_tensorcore', 'TCC-7-512-512-k3-bf16', 20344, '29a97c2a2458f8e49c6d72f059474b4e3839c0b5a62e2107538c8b9621835fff'),
    ('conv2d_nhwc_tensorcore', 'TCC-7-512-512-k3-bf16', 33501, 'f6be252c20f348447d4d6bb437165899ea7739bdb5affb4622f9f596474c65da'),
    ('conv2d_nhwc_tensorcore', 'TCC-7-512-512-k3-bf16', 180618, 'fa3bd86ab6d6af0bdec8b79f5399d7dd1e3ec3519ff8fe31a9c14eb8850393dd'),
    ('conv2d_nhwc_tensorcore', 'TCC-7-512-512-k3-bf16', 609162, '3273e8c9b53565abbd513806e2e95b33b1c3b79caada118ddeae6f273d45e035'),
    ('broadcast_nchw', 'B-div-b', 84, 'de6872f05ebf3bfd9fb81efa91028a9a832a769007333429d928023e57ee4901'),
    ('broadcast_nchw', 'B-div-b', 114, '4774902acbc555e2877b37acaca65201f969ecb56150164d5a473886b66ea5be'),
    ('broadcast_nchw', 'B-div-b', 29, '13b376a015a85b1d72c1793c49a7eb1cbf3dcf25fa34eda4d486ce7ce33903ef'),
    ('broadcast_nchw', 'B-div-b', 112, '1a68146f4a6344610a1d3db5ab5aa8ffa6ae7369e3f86a7986cdb0184f057af5'),
    ('broadcast_nchw', 'B-div-b', 7, '50dddb63bc67e9847150c8f8a253aaef2a2633b608066ca0dfb65f7d0d746b1a'),
    ('broadcast_nchw', 'B-div-b', 71, '8a17a892c35b059b56dc83095c867d6bf55751a5777309a0a939e7d2edc1689b'),
    ('broadcast_nchw', 'B-exp-c-f16', 124, '4eedd0082d80e3405bb910369d1370ce434f68601b66409cc33e9e5011c50819'),
    ('broadcast_nchw', 'B-exp-c-f16', 150, '4c02dbc970a4a9b2710b4f725836a7ee26f74359437ee8a7700931e0a760af90'),
    ('broadcast_nchw', 'B-exp-c-f16', 38, 'bdd7ce3122bf26bdd33207d2e8defc6d6dae2dcba66ae75c693848d6225382b4'),
    ('broadcast_nchw', 'B-exp-c-f16', 148, '03a275b373559e834681e50ffd6a9ae9f0f8d23874d004d97d25f620989c2c81'),
    ('broadcast_nchw', 'B-exp-c-f16', 10, 'c5a8af384b85736a58b88126c6410134b0e3a3464988710b0d915f10e2632a7c'),
    ('broadcast_nchw', 'B-exp-c-f16', 92, 'e7d9172a76bcef3887ce3ee40d8ba59ef4d22c2aa828c35bed95ac17d2053beb'),
    ('broadcast_nchw', 'B-mul_rsqrt-a', 84, '937d3b04bd1acb090fa87994bf607b6d4626d94558f10381f0aaf8a3071f21f4'),
    ('broadcast_nchw', 'B-mul_rsqrt-a', 114, '94ba30280cc044d11ece970ad2db2d896a1503982964181566dfebdee0a6fe46'),
    ('broadcast_nchw', 'B-mul_rsqrt-a', 29, '2922c6c6e7e94828983fb1d59fc71aa9e157762a11e78a35ef903f6cc2e45d62'),
    ('broadcast_nchw', 'B-mul_rsqrt-a', 112, 'eee9bb9704c313a28f6574f936a1f4eba7d5bc5db0056c3bb5add37349d3caa4'),
    ('broadcast_nchw', 'B-mul_rsqrt-a', 7, '7ef0f4040dc14a0f7b304562131dc2d20e76c0baf092cd1e40e3fb3e96d93452'),
    ('broadcast_nchw', 'B-mul_rsqrt-a', 71, 'c04d7274f7132ffe47e218ef7bed330c2bd84c05c04dec61a6ee880132ff245f'),
    ('custom', 'transpose-70x45', 16, '0707fcc3991f934524eea43629fa46dee55504b062f0047fbe6fdc861da57fd3'),
    ('custom', 'transpose-70x45', 31, 'f4ad5fbc406056db87214600a27a7fe002b034c3640fc142bc334117591e2bde'),
    ('custom', 'transpose-70x45', 7, '78706aa1b4abb80b826ec112ed4e03ce6405f945417c885361e37adbd8a4cef6'),
    ('custom', 'transpose-70x45', 32, 'e150338350f166ecf4a093c71351a489559b46c1be5a033a86129299ac61a462'),
    ('custom', 'transpose-70x45', 2, '28a81ed04393666ae27239eedf7204861ed7845b63299e89f58732957977076f'),
    ('custom', 'transpose-70x45', 19, 'f72482a249b2026c0311091f124b6fb7155ac73358acaf07a42d8064a0f20c6a'),
]


def digest(source) -> str:
    h = hashlib.sha256(source.code.encode())
    h.update(repr((source.name, tuple(source.grid), tuple(source.block), source.shared_bytes,
                   tuple(source.arg_order), source.output_index)).encode())
    return h.hexdigest()


def test_the_table_covers_every_registered_template():
    assert {name for name, *_ in SOURCES} == set(TEMPLATES)


@pytest.mark.parametrize("name, workload, index, expected", SOURCES, ids=[f"{n}-{w}-{i}" for n, w, i, _ in SOURCES])
def test_the_generated_source_is_byte_identical(name, workload, index, expected):
    task = engine.create_task(name, ARGS[workload])
    config = task.config_space.get(index)
    assert task.config_space.is_valid(config)
    assert digest(task.template.kernel(task.params, config)) == expected
