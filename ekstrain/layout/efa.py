"""EFA network-interface layouts for Karpenter's ``EC2NodeClass.spec.networkInterfaces``.

Layout (AWS's current recommendation, terraform-aws-eks#3653):
- the primary ENA ``interface`` at network card 0, device 0 (required by the CRD's CEL rule);
- one ``efa-only`` interface per EFA-capable card, device 0, except on card 0 where device 0 is
  taken by the primary, so it goes to device 1;
- exactly ``MaximumEfaInterfaces`` EFA interfaces, never one per network card (p6-b200 has more
  cards than EFA interfaces, eksctl#8685), and never a device index above 1 (eksctl#7520).

``efa-only`` interfaces carry no IP address, which saves up to 31 VPC IPs per p5 node; they need
VPC CNI >= v1.18.4 (see ``ekstrain.facts.versions.MIN_VPC_CNI_FOR_EFA_ONLY``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ekstrain.facts.catalog import InstanceType

PRIMARY = "interface"
EFA_ONLY = "efa-only"


@dataclass(frozen=True, order=True)
class NetworkInterface:
    network_card_index: int
    device_index: int
    interface_type: str

    def to_karpenter(self) -> dict[str, object]:
        return {
            "networkCardIndex": self.network_card_index,
            "deviceIndex": self.device_index,
            "interfaceType": self.interface_type,
        }


def efa_layout(instance: InstanceType) -> list[NetworkInterface]:
    """Interfaces to attach at launch; EFA count == number of ``efa-only`` entries."""
    if not instance.efa_capable:
        raise ValueError(f"{instance.name} has no EFA interfaces (EfaInfo.MaximumEfaInterfaces = 0)")
    cards = instance.efa_card_indices[: instance.efa_max_interfaces]
    if len(cards) < instance.efa_max_interfaces:
        raise ValueError(
            f"{instance.name}: {instance.efa_max_interfaces} EFA interfaces but only {len(cards)} EFA-capable cards"
        )
    layout = [NetworkInterface(0, 0, PRIMARY)]
    layout += [NetworkInterface(card, 1 if card == 0 else 0, EFA_ONLY) for card in cards]
    return layout


def efa_count(layout: list[NetworkInterface]) -> int:
    return sum(1 for i in layout if i.interface_type == EFA_ONLY)
