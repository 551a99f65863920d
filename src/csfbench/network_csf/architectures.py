"""Which classifiers of timm and torchvision the network-pass detectors GRAM and RankFeat can run on, by
architecture name and without importing torch, timm or torchvision: config validation
(:mod:`csfbench.workflow.settings`), which every Snakemake job repeats, refuses a config that would fail in
``fit_network_csf`` at the cost of a set lookup.

GRAM and RankFeat read the network's *block maps* (``encoder.block_maps(x)``, ``encoder.from_last_block``):
csfbench has them for the VGG-13 and ViT it trains, for the ResNets of torchvision and timm
(:class:`csfbench.models.pretrained.TorchvisionEncoder`, :class:`~csfbench.models.pretrained.TimmEncoder`: the
outputs of ``layer1`` … ``layer4``) and for timm's ViTs (:class:`csfbench.models.vit.ViTEncoder`: the outputs of
the transformer blocks).  ODIN-IP reads only the class logits and their gradient with respect to the input,
so it runs on every architecture.

The name tables are those of the pinned timm (1.0.31, as in ``envs/csfbench.yaml``) and of torchvision;
``tests/unit/network_csf/test_architectures.py`` checks them against the installed libraries' registries, so a
library upgrade that adds or renames an architecture fails a test instead of a user's config.
"""
from __future__ import annotations

#: the network-pass detectors that read block maps; the other one, ODIN-IP, runs on any architecture
BLOCK_MAP_DETECTORS = ("GRAM", "RankFeat")

#: torchvision's classifiers of class ``torchvision.models.ResNet`` (module ``torchvision.models.resnet``)
TORCHVISION_RESNETS = frozenset("""
    resnet18 resnet34 resnet50 resnet101 resnet152 resnext50_32x4d resnext101_32x8d resnext101_64x4d
    wide_resnet50_2 wide_resnet101_2
""".split())

#: the timm modules whose every registered model is of class ``timm.models.resnet.ResNet``
TIMM_RESNET_MODULES = ("resnet", "res2net", "resnest", "sknet")
#: the timm modules whose models are of class ``timm.models.vision_transformer.VisionTransformer`` (deit's
#: distilled models excepted: class ``VisionTransformerDistilled``, whose two heads csfbench does not split)
TIMM_VIT_MODULES = ("vision_transformer", "vision_transformer_hybrid", "deit", "vitamin")

#: timm's models of class ``ResNet`` (the models of :data:`TIMM_RESNET_MODULES`, timm 1.0.31)
TIMM_RESNETS = frozenset("""
    ecaresnet101d ecaresnet101d_pruned ecaresnet200d ecaresnet269d ecaresnet26t ecaresnet50d ecaresnet50d_pruned
    ecaresnet50t ecaresnetlight ecaresnext26t_32x4d ecaresnext50t_32x4d res2net101_26w_4s res2net101d
    res2net50_14w_8s res2net50_26w_4s res2net50_26w_6s res2net50_26w_8s res2net50_48w_2s res2net50d res2next50
    resnest101e resnest14d resnest200e resnest269e resnest26d resnest50d resnest50d_1s4x24d resnest50d_4s2x40d
    resnet101 resnet101c resnet101d resnet101s resnet10t resnet14t resnet152 resnet152c resnet152d resnet152s
    resnet18 resnet18d resnet200 resnet200d resnet26 resnet26d resnet26t resnet34 resnet34d resnet50 resnet50_gn
    resnet50c resnet50d resnet50s resnet50t resnetaa101d resnetaa34d resnetaa50 resnetaa50d resnetblur101d
    resnetblur18 resnetblur50 resnetblur50d resnetrs101 resnetrs152 resnetrs200 resnetrs270 resnetrs350 resnetrs420
    resnetrs50 resnext101_32x16d resnext101_32x32d resnext101_32x4d resnext101_32x8d resnext101_64x4d
    resnext50_32x4d resnext50d_32x4d senet154 seresnet101 seresnet152 seresnet152d seresnet18 seresnet200d
    seresnet269d seresnet34 seresnet50 seresnet50t seresnetaa50d seresnext101_32x4d seresnext101_32x8d
    seresnext101_64x4d seresnext101d_32x8d seresnext26d_32x4d seresnext26t_32x4d seresnext50_32x4d
    seresnextaa101d_32x8d seresnextaa201d_32x8d skresnet18 skresnet34 skresnet50 skresnet50d skresnext50_32x4d
    test_resnet wide_resnet101_2 wide_resnet50_2
""".split())

#: timm's models of class ``VisionTransformer`` (the models of :data:`TIMM_VIT_MODULES`, timm 1.0.31)
TIMM_VITS = frozenset("""
    aimv2_1b_patch14_224 aimv2_1b_patch14_336 aimv2_1b_patch14_448 aimv2_3b_patch14_224 aimv2_3b_patch14_336
    aimv2_3b_patch14_448 aimv2_huge_patch14_224 aimv2_huge_patch14_336 aimv2_huge_patch14_448
    aimv2_large_patch14_224 aimv2_large_patch14_336 aimv2_large_patch14_448 beit3_base_patch16_224
    beit3_giant_patch14_224 beit3_giant_patch14_336 beit3_large_patch16_224 deit3_base_patch16_224
    deit3_base_patch16_384 deit3_huge_patch14_224 deit3_large_patch16_224 deit3_large_patch16_384
    deit3_medium_patch16_224 deit3_small_patch16_224 deit3_small_patch16_384 deit_base_patch16_224
    deit_base_patch16_384 deit_small_patch16_224 deit_tiny_patch16_224 eva_large_patch14_196 eva_large_patch14_336
    flexivit_base flexivit_large flexivit_small test_vit test_vit2 test_vit3 test_vit4 vit_base_mci_224
    vit_base_patch14_dinov2 vit_base_patch14_reg1_tipsv2 vit_base_patch14_reg4_dinov2 vit_base_patch16_18x2_224
    vit_base_patch16_224 vit_base_patch16_224_miil vit_base_patch16_384 vit_base_patch16_clip_224
    vit_base_patch16_clip_384 vit_base_patch16_clip_quickgelu_224 vit_base_patch16_gap_224 vit_base_patch16_plus_240
    vit_base_patch16_plus_clip_240 vit_base_patch16_radio_v3 vit_base_patch16_reg4_gap_256 vit_base_patch16_rpn_224
    vit_base_patch16_siglip_224 vit_base_patch16_siglip_256 vit_base_patch16_siglip_384 vit_base_patch16_siglip_512
    vit_base_patch16_siglip_gap_224 vit_base_patch16_siglip_gap_256 vit_base_patch16_siglip_gap_384
    vit_base_patch16_siglip_gap_512 vit_base_patch16_xp_224 vit_base_patch32_224 vit_base_patch32_384
    vit_base_patch32_clip_224 vit_base_patch32_clip_256 vit_base_patch32_clip_384 vit_base_patch32_clip_448
    vit_base_patch32_clip_quickgelu_224 vit_base_patch32_plus_256 vit_base_patch32_siglip_256
    vit_base_patch32_siglip_gap_256 vit_base_patch8_224 vit_base_r26_s32_224 vit_base_r50_s16_224
    vit_base_r50_s16_384 vit_base_resnet26d_224 vit_base_resnet50d_224 vit_betwixt_patch16_gap_256
    vit_betwixt_patch16_reg1_gap_256 vit_betwixt_patch16_reg4_gap_256 vit_betwixt_patch16_reg4_gap_384
    vit_betwixt_patch32_clip_224 vit_dlittle_patch16_reg1_gap_256 vit_dpwee_patch16_reg1_gap_256
    vit_dwee_patch16_reg1_gap_256 vit_giant_patch14_224 vit_giant_patch14_clip_224 vit_giant_patch14_dinov2
    vit_giant_patch14_reg1_tipsv2 vit_giant_patch14_reg4_dinov2 vit_giant_patch16_gap_224 vit_giant_patch16_radio_v3
    vit_giantopt_patch16_siglip_256 vit_giantopt_patch16_siglip_384 vit_giantopt_patch16_siglip_gap_256
    vit_giantopt_patch16_siglip_gap_384 vit_gigantic_patch14_224 vit_gigantic_patch14_clip_224
    vit_gigantic_patch14_clip_378 vit_gigantic_patch14_clip_quickgelu_224 vit_huge_patch14_224
    vit_huge_patch14_clip_224 vit_huge_patch14_clip_336 vit_huge_patch14_clip_378
    vit_huge_patch14_clip_quickgelu_224 vit_huge_patch14_clip_quickgelu_378 vit_huge_patch14_gap_224
    vit_huge_patch14_xp_224 vit_huge_patch16_gap_448 vit_huge_patch16_radio_v3 vit_huge_patch16_radio_v4
    vit_intern300m_patch14_448 vit_large_patch14_224 vit_large_patch14_clip_224 vit_large_patch14_clip_336
    vit_large_patch14_clip_quickgelu_224 vit_large_patch14_clip_quickgelu_336 vit_large_patch14_dinov2
    vit_large_patch14_reg1_tipsv2 vit_large_patch14_reg4_dinov2 vit_large_patch14_xp_224 vit_large_patch16_224
    vit_large_patch16_384 vit_large_patch16_radio_v3 vit_large_patch16_siglip_256 vit_large_patch16_siglip_384
    vit_large_patch16_siglip_512 vit_large_patch16_siglip_gap_256 vit_large_patch16_siglip_gap_384
    vit_large_patch16_siglip_gap_512 vit_large_patch32_224 vit_large_patch32_384 vit_large_r50_s32_224
    vit_large_r50_s32_384 vit_little_patch16_reg1_gap_256 vit_little_patch16_reg4_gap_256
    vit_medium_patch16_clip_224 vit_medium_patch16_gap_240 vit_medium_patch16_gap_256 vit_medium_patch16_gap_384
    vit_medium_patch16_reg1_gap_256 vit_medium_patch16_reg4_gap_256 vit_medium_patch32_clip_224
    vit_mediumd_patch16_reg4_gap_256 vit_mediumd_patch16_reg4_gap_384 vit_pwee_patch16_reg1_gap_256
    vit_small_patch14_dinov2 vit_small_patch14_reg4_dinov2 vit_small_patch16_18x2_224 vit_small_patch16_224
    vit_small_patch16_36x1_224 vit_small_patch16_384 vit_small_patch32_224 vit_small_patch32_384
    vit_small_patch8_224 vit_small_r26_s32_224 vit_small_r26_s32_384 vit_small_resnet26d_224
    vit_small_resnet50d_s16_224 vit_so150m2_patch16_reg1_gap_256 vit_so150m2_patch16_reg1_gap_384
    vit_so150m2_patch16_reg1_gap_448 vit_so150m_patch16_reg4_gap_256 vit_so150m_patch16_reg4_gap_384
    vit_so150m_patch16_reg4_map_256 vit_so400m_patch14_reg1_tipsv2 vit_so400m_patch14_siglip_224
    vit_so400m_patch14_siglip_378 vit_so400m_patch14_siglip_384 vit_so400m_patch14_siglip_gap_224
    vit_so400m_patch14_siglip_gap_378 vit_so400m_patch14_siglip_gap_384 vit_so400m_patch14_siglip_gap_448
    vit_so400m_patch14_siglip_gap_896 vit_so400m_patch16_radio_v4 vit_so400m_patch16_siglip_256
    vit_so400m_patch16_siglip_384 vit_so400m_patch16_siglip_512 vit_so400m_patch16_siglip_gap_256
    vit_so400m_patch16_siglip_gap_384 vit_so400m_patch16_siglip_gap_512 vit_tiny_patch16_224 vit_tiny_patch16_384
    vit_tiny_r_s16_p8_224 vit_tiny_r_s16_p8_384 vit_wee_patch16_reg1_gap_256 vit_xsmall_patch16_clip_224
    vitamin_base_224 vitamin_large2_224 vitamin_large2_256 vitamin_large2_336 vitamin_large2_384 vitamin_large_224
    vitamin_large_256 vitamin_large_336 vitamin_large_384 vitamin_small_224 vitamin_xlarge_256 vitamin_xlarge_336
    vitamin_xlarge_384
""".split())

#: {library: the architecture names with block maps}
BLOCK_MAP_ARCHITECTURES = {"torchvision": TORCHVISION_RESNETS, "timm": TIMM_RESNETS | TIMM_VITS}

#: which architectures have block maps, in every refusal
_SUPPORTED = ("csfbench has them for the ResNets of torchvision (resnet*, resnext*, wide_resnet*) and of timm "
              "(class ResNet: resnet*, resnext*, seresnet*, ecaresnet*, res2net*, resnest*, skresnet*, ...), timm's "
              "VisionTransformer models and its own vgg13 and vit backbones (docs/pretrained.md)")


def has_block_maps(library: str, arch: str) -> bool:
    """Whether the classifier ``arch`` of ``library`` (``"timm"`` | ``"torchvision"``) has block maps; a timm
    name's pretrained tag (``resnet50.a1_in1k``) does not matter."""
    name = arch.split(".", 1)[0] if library == "timm" else arch
    return name in BLOCK_MAP_ARCHITECTURES.get(library, frozenset())


def block_maps_refusal(model: str, detectors: tuple[str, ...] | list[str] = BLOCK_MAP_DETECTORS,
                       keep: tuple[str, ...] | list[str] = ("ODIN-IP",)) -> str:
    """Why ``detectors`` (of :data:`BLOCK_MAP_DETECTORS`) cannot run on ``model`` (e.g. ``"torchvision
    densenet121"``) and how to turn them off, leaving the network-pass detectors ``keep``: the text of the
    config error and of the encoders' ``NotImplementedError``."""
    named = " and ".join(detectors)
    verb = "reads" if len(detectors) == 1 else "read"
    fix = (f"Remove {named} from network_csf.methods (network_csf.methods: [{', '.join(keep)}]), or set "
           "network_csf.methods: [] for no network-pass detector" if keep else
           "Set network_csf.methods: [ODIN-IP], or [] for no network-pass detector")
    return (f"{named} {verb} the network's block maps, and {model} has none ({_SUPPORTED}); ODIN-IP needs only the "
            f"logits and their input gradient and runs on any architecture. {fix}")
