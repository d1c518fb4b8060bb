import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { MembersModule } from '../members/members.module';
import { OrgPoliciesController } from './org-policies.controller';
import { OrgPoliciesRepository } from './org-policies.repository';
import { OrgPoliciesService } from './org-policies.service';

@Module({
  imports: [AuthModule, MembersModule],
  controllers: [OrgPoliciesController],
  providers: [OrgPoliciesRepository, OrgPoliciesService],
})
export class OrgPoliciesModule {}
